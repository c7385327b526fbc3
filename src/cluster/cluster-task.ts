import { FIRST_CHECKPOINT_DELAY_MS } from '../checkpoint/checkpoint-coordinator.ts';
import type { OperatorSubtaskState } from '../checkpoint/operator-subtask-state.ts';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { openCheckpointStorage } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { formatBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { buildStreamGraph } from '../graph/job.ts';
import type { FromWorker } from '../runtime/deployment/worker-messages.ts';
import { injectedFault, injectedFaultPoint } from '../runtime/jobmaster/injected-fault.ts';
import type { TaskMetricsSnapshot } from '../runtime/metrics/task-metrics.ts';
import { StreamTask } from '../runtime/tasks/stream-task.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import { type BarrierAt, ExchangeInput } from './exchange-input.ts';
import type { MemberRuntime } from './member-runtime.ts';
import { type InputPartitionLayout, inputLayout, mergeSkips } from './savepoint-alignment.ts';
import type { Stage } from './stage-plan.ts';
import { restoredChannels, taskInputs, taskRecordWriters } from './task-channels.ts';
import { commitTaskCheckpoint, type TaskCheckpoint } from './task-checkpoint.ts';
import { type PendingCheckpoint, sinkCommittedRecord, sourceOffsets, taskCheckpointRecord, taskRestoreInfo } from './task-checkpoint-record.ts';
import { TaskHousekeeping } from './task-housekeeping.ts';
import { TaskOutput } from './task-output.ts';
import { writeSavepointPart } from './task-savepoint.ts';
import { type Aligned, TaskSavepoints } from './task-savepoints.ts';
import { createTaskSinkOperator, sinkCommitFault } from './task-sink.ts';
import { taskStorageRoot } from './task-storage.ts';

/**
 * One task of a cluster-mode job (Kafka Streams' StreamTask): its stage's chain as a
 * {@link StreamTask} of the engine, with the task's number as its subtask index, fed by its source
 * split or by its exchange topics' partition ({@link ExchangeInput}), writing everything into its
 * own Kafka transaction ({@link TaskOutput}), restored from its latest committed checkpoint.
 *
 * Every checkpoint interval: a barrier goes in (a source task's trigger, or one barrier per
 * channel behind what was read), the chain snapshots as it passes and seals the transaction, the
 * state files go to the shared storage, and then one commit makes the output, the input offsets
 * and the checkpoint record visible together (task-checkpoint.ts). Any failure (the task's own,
 * a fenced producer, a send that failed) ends the task; its member decides what comes next.
 *
 * Bounded input: once the task's input has ended (its source's splits, or an end frame on every
 * channel) its chain finishes as in one process (the end of event time, every operator's
 * endInput: async queues drained, windows fired), and its next checkpoint is its final one, taken
 * at once: its transaction carries an end frame into every exchange partition it writes, and its
 * record says `ended`. A task restored from such a record does not run again: it stays ended. With
 * a two-phase-commit sink, the record says `sinkCommit: pending`, and a second one `committed` once
 * the sink committed; an owner restoring a pending one opens the chain (the sink's restore commits
 * the committables again, task-sink.ts) and commits the second record before it stays ended.
 */
export class ClusterTask {
  readonly stage: Stage;
  readonly task: number;
  readonly name: string;
  readonly #runtime: MemberRuntime;
  readonly #restored: TaskCheckpoint | undefined;
  readonly #onFailure: (error: unknown) => void;
  #output!: TaskOutput;
  #streamTask!: StreamTask;
  #input: ExchangeInput | undefined;
  #storage!: CheckpointStorage;
  #timer: NodeJS.Timeout | undefined;
  #nextCheckpointId: number;
  readonly #pending = new Map<number, PendingCheckpoint>();
  readonly #savepoints: TaskSavepoints;
  #inputLayout: InputPartitionLayout[] = [];
  /** What the task had read and its watermark when the last checkpoint was triggered. */
  #lastTrigger: { recordsIn: number; watermark: number } | undefined;
  readonly #housekeeping = new TaskHousekeeping();
  #completing: Promise<void> = Promise.resolve();
  #stopped = false;
  /** A two-phase-commit sink runs in the task's chain: it commits its committables once the task's transaction has committed. */
  #committer = false;
  /** The start under way: a stop waits for it, then closes whatever it opened. */
  #starting: Promise<void> | undefined;
  /** The task's input ended and its chain finished: its next checkpoint is its final one (its record says `ended`). */
  #inputEnded = false;
  /** The latest checkpoint this task committed (or restored). */
  latest: TaskCheckpoint | undefined;
  /** How long opening its operators took, their state restored (ms). */
  restoreMs = 0;
  /** Checkpoints this task committed since it started here. */
  completed = 0;

  constructor(runtime: MemberRuntime, stage: Stage, task: number, restored: TaskCheckpoint | undefined, onFailure: (error: unknown) => void) {
    this.#runtime = runtime;
    this.stage = stage;
    this.task = task;
    this.name = `${stage.uid} task ${task}`;
    this.#restored = restored;
    this.latest = restored;
    this.#onFailure = onFailure;
    this.#nextCheckpointId = (restored?.checkpointId ?? 0) + 1;
    this.#savepoints = new TaskSavepoints(this.name, runtime.savepoints, restored?.savepoint);
  }

  /** Opens the task on its transaction (InitProducerId done: the old owner is fenced) and starts it. */
  start(open: OpenTransaction): Promise<void> {
    this.#starting = this.#start(open);
    return this.#starting;
  }

  async #start(open: OpenTransaction): Promise<void> {
    const ended = this.#restored?.ended === true;
    if (ended && this.#restored?.sinkCommit !== 'pending') {
      // Its final checkpoint is committed (its end frames with it): run again, it would emit its end of input twice.
      this.#runtime.log(`${this.name}: ended at checkpoint ${this.#restored.checkpointId} (its input ended): it stays ended`);
      return;
    }
    if (this.#savepoints.halted) {
      this.#runtime.log(`${this.name}: halted by stopping savepoint ${this.#savepoints.part?.id}: it does not run`);
      this.#timer = this.#savepoints.watchHalted((error) => this.#fail(error));
      return;
    }
    const { config, graph, plan, taskCounts } = this.#runtime;
    const { stage, task } = this;
    const vertex = graph.vertices[stage.vertices[0] as number];
    if (vertex === undefined) throw new Error(`stage ${stage.uid} has no vertex`);
    const taskCount = taskCounts[stage.id] as number;
    this.#storage = openCheckpointStorage(taskStorageRoot(config.checkpointing.storage, stage, task, open));
    await this.#storage.initialize();
    this.#output = new TaskOutput(this.#runtime.driver, open, formatBootstrap(this.#runtime.bootstrap), {
      onAvailable: () => this.#streamTask.onCredit(),
      onFailure: (error) => this.#fail(error),
    });
    // Before the exchange writers' hooks: whether the checkpoint sealed now is the final one decides their end frames.
    this.#output.onSeal((checkpointId) => {
      const pending = this.#pending.get(checkpointId);
      if (pending !== undefined && this.#inputEnded) pending.ended = true;
    });
    const streamGraph = buildStreamGraph(this.#runtime.job);
    const recordWriters = taskRecordWriters({
      graph,
      plan,
      streamGraph,
      stage,
      task,
      maxParallelism: config.maxParallelism,
      output: this.#output,
      barrierOf: (id) => this.#pending.get(id)?.savepoint,
      endsAt: (id) => this.#pending.get(id)?.ended === true,
    });
    // One channel per upstream task of each exchange it reads, so its valve takes their minimum watermark.
    const { inputChannels, inputIndexOf, partitions } = taskInputs({ graph, plan, taskCounts, stage, task, restored: this.#restored });
    this.#inputLayout = inputLayout(partitions, inputChannels.length);
    this.#streamTask = new StreamTask({
      jobName: graph.jobName,
      config,
      vertex: { ...vertex, parallelism: taskCount },
      subtaskIndex: task,
      attemptNumber: 0,
      streamGraph,
      uids: graph.nodes.map((node) => node.uid),
      restore: taskRestoreInfo(this.#restored, this.#runtime.fromSavepoint, this.#runtime.config.maxParallelism, task, taskCount),
      storage: this.#storage,
      inputChannels,
      inputIndexOf,
      recordWriters,
      returnCredit: () => this.#input?.returnCredit(),
      toMaster: (message) => this.#fromTask(message),
      // A task restores only its own state, so its source could not tell another task's partition
      // from a new one: partition discovery would read every other task's partition again.
      fixedSplits: true,
      taskOwner: { producerId: open.producerId, epoch: open.producerEpoch },
      createSinkOperator: (sink, uid) => {
        const { operator, kind } = createTaskSinkOperator(sink, uid, this.#output);
        if (kind === 'two-phase-commit') this.#committer = true;
        return operator;
      },
    });
    if (this.#stopped) return;
    const opening = performance.now();
    await this.#streamTask.open();
    this.restoreMs = performance.now() - opening;
    if (ended) return this.#sinkCommitted(true); // the open restored its final checkpoint: its sinks committed what it holds
    if (partitions.length > 0 && !this.#stopped) {
      const { marks, skips } = restoredChannels(this.#restored);
      if (skips.length > 0)
        this.#runtime.log(`${this.name}: reads past the frames of ${skips.length} channels already in its restored state (a savepoint's alignment)`);
      this.#input = new ExchangeInput({
        bootstrap: this.#runtime.bootstrap,
        connection: this.#runtime.connection,
        partitions,
        task,
        taskCount,
        deliver: (message) => this.#streamTask.deliver(message),
        onFailure: (error) => this.#fail(error),
        marks,
        skips,
        onBarrier: (barrier, at) => this.#onBarrier(barrier, at),
        onEnd: (at) => {
          const aligned = this.#stopped ? undefined : this.#savepoints.onEnd(at);
          if (aligned !== undefined) this.#aligned(aligned);
        },
      });
      await this.#input.open();
    }
    if (this.#stopped) return;
    this.#streamTask.start();
    this.#scheduleCheckpoints(config.checkpointing.interval, performance.now());
  }

  /**
   * A checkpoint every FIRST_CHECKPOINT_DELAY_MS for the first interval, then one every interval: a
   * stage's records are read downstream only once its transaction committed, so after a failover
   * each stage of a chain in turn waited a whole interval. Where nothing moved, nothing is committed.
   */
  #scheduleCheckpoints(interval: number, startedAt: number): void {
    const early = performance.now() - startedAt < interval;
    this.#timer = setTimeout(
      () => {
        if (this.#stopped) return;
        this.#triggerCheckpoint();
        if (early) return this.#scheduleCheckpoints(interval, startedAt);
        this.#timer = setInterval(() => this.#triggerCheckpoint(), interval);
        this.#timer.unref();
      },
      early ? Math.min(interval, FIRST_CHECKPOINT_DELAY_MS) : interval,
    );
    this.#timer.unref();
  }

  /** Stops the task: no more input, its open transaction aborted (a checkpoint being committed finishes first). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#starting?.catch(() => {}); // a task stopped while it starts is closed once its parts exist
    clearInterval(this.#timer);
    await this.#input?.close().catch(() => {});
    await this.#streamTask?.close().catch(() => {});
    await this.#completing.catch(() => {});
    if (this.#output !== undefined) await this.#runtime.driver.abort(this.#output.transaction).catch(() => {});
  }

  /** Its metrics as a subtask of its stage's vertex (the dashboard's operators, rates and watermarks). */
  metrics(now: number): TaskMetricsSnapshot | undefined {
    const vertexId = this.stage.vertices[0] as number;
    return this.#streamTask?.metrics.snapshot(vertexId, this.task, now);
  }

  /** Its input ended and its final checkpoint (its record says `ended`) is committed: it does nothing more. */
  get ended(): boolean {
    return this.latest?.ended === true;
  }

  /** The bytes of the state files it restored. */
  get restoredBytes(): number {
    return (this.#restored?.state?.operators ?? []).reduce((sum, operator) => sum + (operator.keyed?.size ?? 0) + (operator.operator?.size ?? 0), 0);
  }

  /** The savepoints whose part this task is committing. */
  *#pendingSavepoints(): Iterable<number> {
    for (const pending of this.#pending.values()) if (pending.savepoint !== undefined) yield pending.savepoint.savepoint;
  }

  #triggerCheckpoint(): void {
    const givenUp = this.#savepoints.givenUp(this.#pendingSavepoints());
    if (givenUp !== undefined && !this.#stopped) {
      this.#fail(givenUp);
      return;
    }
    if (this.#stopped || this.ended || this.#savepoints.halted || this.#pending.size > 0 || this.#savepoints.aligning) return;
    // A source task takes its part of a savepoint asked for at its next checkpoint, idle or not; so
    // does a task whose every input channel ended (no barrier will come: FLIP-147) while it still runs.
    const noBarrierComes = this.#input === undefined || this.#input.endedChannels().length === this.#streamTask.env.inputChannels.length;
    const savepoint = noBarrierComes ? this.#savepoints.requested() : undefined;
    // An idle task commits nothing (Issue 35): no record came in since the last checkpoint was
    // triggered, none went out, its watermark and its exchange frames' did not move, so its latest
    // checkpoint record still holds. (A processing-time timer that only changes state is left to
    // the next checkpoint that carries a change; a restore before it fires it again.)
    const mark = { recordsIn: this.#streamTask.metrics.recordsIn, watermark: this.#streamTask.currentWatermark };
    const last = this.#lastTrigger;
    const idle =
      last !== undefined && this.latest !== undefined && last.recordsIn === mark.recordsIn && last.watermark === mark.watermark && this.#output.quiet;
    // The final checkpoint (the input ended) is taken, idle or not: its record says `ended`.
    if (idle && savepoint === undefined && !this.#inputEnded) return;
    this.#lastTrigger = mark;
    const id = this.#nextCheckpointId++;
    const location = this.#storage.checkpointLocation(id);
    if (this.#input === undefined) {
      this.#pending.set(id, { id, location, offsets: undefined, channels: undefined, skips: undefined, savepoint });
      this.#streamTask.triggerCheckpoint(location, savepoint?.stop);
      return;
    }
    // The barrier goes in behind everything read so far, on every channel: aligned at once.
    const offsets = this.#input.positions(id);
    this.#pending.set(id, { id, location, offsets, channels: this.#input.marks(), skips: this.#input.skipsAfter(offsets), savepoint });
    for (let channel = 0; channel < this.#streamTask.env.inputChannels.length; channel++) this.#streamTask.deliver({ kind: 'barrier', channel, location });
  }

  /** A savepoint's barrier frame was read on a channel: into the task (its barrier handler blocks the channel); the last one completes the alignment. */
  #onBarrier(barrier: SavepointBarrier, at: BarrierAt): boolean {
    if (this.#stopped) return false;
    const aligned = this.#savepoints.onBarrier(barrier, at, this.#inputLayout, this.#input?.endedChannels() ?? [], () => {
      const id = this.#nextCheckpointId++;
      return { id, location: this.#storage.checkpointLocation(id) };
    });
    if (aligned instanceof WeirError) {
      this.#fail(aligned);
      return false;
    }
    return aligned !== undefined && this.#aligned(aligned);
  }

  /**
   * The task's barrier handler gets a barrier for every channel the alignment counts now (an ended
   * channel's end frame stands for its barrier: FLIP-147); once complete, the savepoint's part is
   * the checkpoint it takes. True when the frame's channel is blocked until then.
   */
  #aligned({ alignment, added, blocks }: Aligned): boolean {
    for (const { channel } of added) this.#streamTask.deliver({ kind: 'barrier', channel, location: alignment.location });
    if (!alignment.complete) return blocks;
    const offsets = alignment.positions(this.#input?.positions(alignment.checkpointId) ?? []);
    const { checkpointId: id, location, barrier } = alignment;
    // The restored skips still ahead stay (a position from an end frame or the reader's may lie below them).
    const skips = mergeSkips(alignment.skips(offsets), this.#input?.skipsAfter(offsets) ?? []);
    this.#pending.set(id, { id, location, offsets, channels: alignment.marks(), skips, savepoint: barrier });
    this.#input?.alignmentDone();
    return false;
  }

  #fromTask(message: FromWorker): void {
    switch (message.type) {
      case 'ack': {
        // One commit after the other: a savepoint's part may be acknowledged while the checkpoint before it commits.
        const { checkpointId, operators } = message;
        this.#completing = this.#completing.then(() => this.#complete(checkpointId, operators)).catch((error: unknown) => this.#fail(error));
        return;
      }
      case 'decline':
        this.#fail(
          new WeirError('CHECKPOINT_FAILED', `${this.name}: checkpoint ${message.checkpointId} was declined: ${message.failure.message}`, {
            fault: 'internal',
          }),
        );
        return;
      case 'failed':
        this.#fail(WeirError.fromSerialized(message.error));
        return;
      case 'notified':
        // Its sinks committed its final checkpoint's committables (their notifyCheckpointComplete): a record says so.
        if (this.latest?.sinkCommit === 'pending' && message.checkpointId === this.latest.checkpointId)
          this.#completing = this.#completing.then(() => this.#sinkCommitted(false)).catch((error: unknown) => this.#fail(error));
        return;
      case 'endOfData':
        // The chain has finished (end of event time, every operator's endInput): the final checkpoint, now.
        this.#inputEnded = true;
        this.#runtime.log(`${this.name}: its input ended: it takes its final checkpoint`);
        setImmediate(() => this.#triggerCheckpoint());
        return;
      default:
        return;
    }
  }

  async #complete(checkpointId: number, operators: OperatorSubtaskState[]): Promise<void> {
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined || this.#stopped) return;
    const { savepoint: barrier, location } = pending;
    const part = { storage: this.#storage, location, operators, checkpointId, task: this.task, graph: this.#runtime.graph, committables: this.#committer };
    const taskCount = this.#runtime.taskCounts[this.stage.id] as number;
    const savepoint = barrier === undefined ? this.#savepoints.part : await writeSavepointPart({ ...part, taskCount, barrier });
    const restoredFrom = this.#restored === undefined ? this.#runtime.fromSavepoint?.folder : this.#restored.restoredFrom;
    const transaction = await this.#output.sealedSent(checkpointId);
    const offsets = pending.offsets ?? sourceOffsets(this.#streamTask.sourceSplits);
    const owner = this.#runtime.owner();
    const checkpoint = taskCheckpointRecord({
      stage: this.stage.uid,
      task: this.task,
      pending,
      operators,
      offsets,
      watermark: this.#streamTask.currentWatermark,
      savepoint,
      restoredFrom,
      owner,
      committer: this.#committer,
    });
    await commitTaskCheckpoint(this.#runtime.driver, this.#runtime.connections, transaction, owner, this.#runtime.plan.checkpointTopic, checkpoint);
    this.#output.committed(this.#runtime.driver.nextTransaction(transaction));
    this.latest = checkpoint;
    this.completed++;
    this.#pending.delete(checkpointId);
    if (barrier !== undefined && savepoint !== undefined) {
      const failure = this.#savepoints.committed(barrier, savepoint, checkpointId, this.#runtime.log);
      if (failure !== undefined) this.#fail(failure);
    }
    // The task's transaction committed: its two-phase-commit sinks commit what the record holds (task-sink.ts).
    const fault = this.#committer ? sinkCommitFault(checkpointId, pending.savepoint?.savepoint, this.name, checkpoint.ended === true) : undefined;
    if (fault !== undefined) return this.#fail(fault);
    this.#streamTask.notifyCheckpointComplete(checkpointId);
    await this.#housekeeping.committed(this.#storage, this.#runtime.connections, pending, checkpoint.ended === true, this.completed);
    if (checkpoint.ended === true) this.#endedWith(checkpointId);
    else if (this.#inputEnded && this.#pending.size === 0) this.#triggerCheckpoint(); // one triggered before the end committed: now the final one
  }

  /** Its final checkpoint is committed: no more checkpoints (a test's crash right after: WEIR_FAULT=task-ended:<checkpoint id>). */
  #endedWith(checkpointId: number): void {
    clearInterval(this.#timer);
    this.#runtime.log(`${this.name} ended: its final checkpoint ${checkpointId} is committed`);
    if (injectedFaultPoint === 'task-ended') {
      const failure = injectedFault('task-ended', checkpointId, this.name);
      if (failure !== undefined) this.#fail(failure);
    }
  }

  /** Its sinks committed its final checkpoint's committables (`restored`: its chain's open did): the record says so. */
  async #sinkCommitted(restored: boolean): Promise<void> {
    if (restored) await this.#streamTask.close();
    const latest = this.latest;
    if (this.#stopped || latest === undefined) return;
    const owner = this.#runtime.owner();
    const checkpoint = sinkCommittedRecord(latest, owner);
    // A transaction of its own (the same producer): the task's output writes nothing more.
    const transaction = this.#runtime.driver.nextTransaction(this.#output.transaction);
    await commitTaskCheckpoint(this.#runtime.driver, this.#runtime.connections, transaction, owner, this.#runtime.plan.checkpointTopic, checkpoint);
    this.latest = checkpoint;
    const how = restored ? ' again (restored): it stays ended' : '';
    this.#runtime.log(`${this.name}: its sinks committed the committables of its final checkpoint ${latest.checkpointId}${how}`);
  }

  #fail(error: unknown): void {
    if (this.#stopped) return;
    this.#onFailure(error);
  }
}
