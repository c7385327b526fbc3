import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { Sink } from '../../core/connector/sink.ts';
import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { TaskOwner } from '../../core/operator/task-owner.ts';
import { channelStateUid } from '../../graph/channel-state-uid.ts';
import type { JobVertex } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';
import type { RestoreInfo } from '../deployment/restore-info.ts';
import type { FromWorker } from '../deployment/worker-messages.ts';
import type { ChannelMessage } from '../io/channel-message.ts';
import { readChannelState } from '../io/checkpointing/channel-state-reader.ts';
import { CheckpointBarrierTracker } from '../io/checkpointing/checkpoint-barrier-tracker.ts';
import { checkpointOptionsFor } from '../io/checkpointing/checkpoint-options.ts';
import { SingleCheckpointBarrierHandler } from '../io/checkpointing/single-checkpoint-barrier-handler.ts';
import type { RecordWriter } from '../io/record-writer.ts';
import { TaskMetrics } from '../metrics/task-metrics.ts';
import { isThenable } from './is-thenable.ts';
import type { Mail } from './mail.ts';
import { MailboxProcessor } from './mailbox-processor.ts';
import { type ChainedOperator, OperatorChain, type OperatorStateHolder } from './operator-chain.ts';
import { ProcessingTimeService } from './processing-time-service.ts';
import { sourceBatchSizer } from './source-batch-sizer.ts';
import { StreamTaskNetworkInput } from './stream-task-network-input.ts';
import { StreamTaskSourceInput } from './stream-task-source-input.ts';
import { StreamTaskStateInitializer } from './stream-task-state-initializer.ts';
import { type CheckpointListener, SubtaskCheckpointCoordinator } from './subtask-checkpoint-coordinator.ts';

/** Everything a task needs from the worker that hosts it. */
export interface TaskEnvironment {
  jobName: string;
  config: EnvironmentConfig;
  vertex: JobVertex;
  subtaskIndex: number;
  attemptNumber: number;
  /** This task's own copy of the job's graph (its own function instances). */
  streamGraph: StreamGraph;
  /** uid of every stream node, by id. */
  uids: string[];
  restore: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  inputChannels: number[];
  /** Which input (0 or 1) of the head operator each input channel feeds; channels not listed feed input 0. */
  inputIndexOf?: ReadonlyMap<number, number>;
  /** Every output edge: the main output's, and side outputs' (RecordWriter.outputTag). */
  recordWriters: RecordWriter[];
  returnCredit: (channelId: number) => void;
  toMaster: (message: FromWorker) => void;
  /** Cluster mode: the operator of a sink node (writing into the task's transaction) in place of the sink's own. */
  createSinkOperator?: (sink: Sink<unknown>, uid: string) => StreamOperator<unknown, unknown>;
  /** Cluster mode: a source's splits are the task's by the plan; its reader discovers none. */
  fixedSplits?: boolean;
  /** Cluster mode: the producer this run of the task was fenced in with (OperatorContext.taskOwner). */
  taskOwner?: TaskOwner;
}

/**
 * One subtask of a vertex (Flink's StreamTask), made of the parts Flink's engineers know by name:
 * the {@link MailboxProcessor} (one loop: mails first, then input, none while an output has no
 * credit), the {@link OperatorChain}, its input (a {@link StreamTaskSourceInput} for a source, else
 * a {@link StreamTaskNetworkInput} with its barrier handler: aligned for exactly-once, a tracker for
 * at-least-once; with `checkpointing.unaligned` the aligned one switches a checkpoint to unaligned,
 * whose channel state a restore replays before new input), the {@link SubtaskCheckpointCoordinator} (snapshot, barrier, write, acknowledge),
 * the {@link StreamTaskStateInitializer} (state restored on open) and the
 * {@link ProcessingTimeService}.
 *
 * Event time: watermarks and watermark statuses arrive on the channels in order with records and
 * barriers (a blocked channel holds them back too). The task's watermark is the minimum over its
 * channels, idle ones left out; a source task makes its watermark from its watermark strategy, per
 * split. Watermarks are not checkpointed: after a restore they start again from -Infinity, and
 * restored event-time timers fire once the new watermarks pass them (as in Flink).
 */
export class StreamTask {
  readonly env: TaskEnvironment;
  readonly name: string;
  /** Records in and out, back pressure, busy time and the operators' own metrics. */
  readonly metrics = new TaskMetrics();
  readonly #chain: OperatorChain;
  readonly #checkpoints: SubtaskCheckpointCoordinator;
  readonly #timers: ProcessingTimeService;
  readonly #mailbox: MailboxProcessor;
  readonly #networkInput: StreamTaskNetworkInput | undefined;
  #sourceInput: StreamTaskSourceInput | undefined;
  #endOfInput = false;
  #failed = false;

  constructor(env: TaskEnvironment) {
    this.env = env;
    this.name = `${env.vertex.name} (${env.subtaskIndex + 1}/${env.vertex.parallelism})`;
    this.#chain = new OperatorChain(env.recordWriters, this.metrics);
    this.#checkpoints = new SubtaskCheckpointCoordinator({
      chain: this.#chain,
      stateHolders: () => this.#stateHolders(),
      listeners: () => this.#checkpointListeners(),
      storage: env.storage,
      vertexId: env.vertex.id,
      subtaskIndex: env.subtaskIndex,
      toMaster: env.toMaster,
      incremental: env.config.checkpointing?.incremental === true,
      incrementalMaxChanges: env.config.checkpointing?.incrementalMaxChanges,
      metrics: (uid) => this.metrics.group(uid),
    });
    this.#timers = new ProcessingTimeService((operatorIndex) => this.#mailbox.put({ kind: 'processing-time', operatorIndex }));
    if (!env.vertex.isSource) {
      const channels = env.inputChannels.length;
      const checkpointing = env.config.checkpointing;
      this.#networkInput = new StreamTaskNetworkInput({
        inputChannels: env.inputChannels,
        inputIndexOf: env.inputIndexOf,
        chain: this.#chain,
        barrierHandler: checkpointing?.mode === 'at-least-once' ? new CheckpointBarrierTracker(channels) : new SingleCheckpointBarrierHandler(channels),
        metrics: this.metrics,
        returnCredit: env.returnCredit,
        checkpointState: (location, alignmentMs, options, channelState) => this.#checkpoints.checkpointState(location, alignmentMs, options, channelState),
        abortCheckpoint: (checkpointId, failure) => this.#checkpoints.abortCheckpoint(checkpointId, failure),
        onEndOfInput: () => this.#endInput(),
        unaligned:
          checkpointing?.unaligned === true
            ? { channelStateUid: this.#channelStateUid, runInLoop: (action) => this.#mailbox.put({ kind: 'operator', action }) }
            : undefined,
      });
    }
    this.#mailbox = new MailboxProcessor({
      input: { processInput: () => (this.#sourceInput ?? (this.#networkInput as StreamTaskNetworkInput)).processInput() },
      runMail: (mail) => this.#runMail(mail),
      outputsAvailable: () => this.#chain.outputsAvailable,
      metrics: this.metrics,
      onFailure: (error) => this.#fail(error),
      maxInputSteps: env.vertex.isSource ? 4 : 64,
    });
  }

  /** Creates the chain's operators, restoring their state, and opens them (a source's reader too). */
  async open(): Promise<void> {
    const { env } = this;
    const { vertex, subtaskIndex, config } = env;
    const state = new StreamTaskStateInitializer({
      maxParallelism: config.maxParallelism,
      parallelism: vertex.parallelism,
      subtaskIndex,
      restore: env.restore,
      storage: env.storage,
      stateBackend: config.stateBackend,
      ...(config.stateDir === undefined ? {} : { stateDir: config.stateDir }),
      jobName: env.jobName,
    });
    for (const [position, nodeId] of vertex.nodeIds.entries()) {
      const node = env.streamGraph.node(nodeId);
      const uid = env.uids[nodeId] as string;
      const reinterpreted = node.kind === 'operator' && node.reinterpretedKeyed === true;
      const keyed = (position === 0 && vertex.keyed) || reinterpreted ? await state.keyedStateBackend(uid, node.name, reinterpreted) : undefined;
      // Incremental checkpoints go on adding to the restored chain (its changes tracked from here on), not with a full snapshot.
      const restoredChain = keyed?.trackChangesSince !== undefined && config.checkpointing?.incremental === true ? state.restoredChain(uid) : undefined;
      if (restoredChain !== undefined) {
        keyed?.trackChangesSince?.(restoredChain.checkpointId);
        this.#checkpoints.restoredChain(uid, restoredChain.checkpointId, restoredChain.links);
      }
      const operatorState = await state.operatorStateBackend(uid);
      if (node.kind === 'source') {
        this.#sourceInput = new StreamTaskSourceInput({
          node,
          uid,
          operatorState,
          restored: state.isRestored(uid),
          fixedSplits: env.fixedSplits === true,
          subtaskIndex,
          parallelism: vertex.parallelism,
          maxParallelism: config.maxParallelism,
          attemptNumber: env.attemptNumber,
          batchSize: config.batchSize,
          batchSizer: sourceBatchSizer(config, env.recordWriters, this.metrics),
          chain: this.#chain,
          metrics: this.metrics,
          onEndOfInput: () => this.#endInput(),
        });
        await this.#sourceInput.open();
        continue;
      }
      const operator = (
        node.kind === 'sink' ? (env.createSinkOperator?.(node.sink as Sink<unknown>, uid) ?? node.sink.createOperator()) : node.createOperator()
      ) as StreamOperator<unknown, unknown>;
      const index = this.#chain.add({ uid, name: node.name, operator, keyed, operatorState });
      const context: OperatorContext = {
        jobName: env.jobName,
        operatorName: node.name,
        uid,
        subtaskIndex,
        parallelism: vertex.parallelism,
        maxParallelism: config.maxParallelism,
        attemptNumber: env.attemptNumber,
        restoredCheckpointId: env.restore?.checkpointId,
        restoredTransactionsCommitted: env.restore?.transactionsCommitted ?? false,
        restoredCheckpointSupersededBy: env.restore?.supersededBy,
        checkpointingMode: config.checkpointing?.mode ?? 'off',
        taskOwner: env.taskOwner,
        keyedState: keyed,
        operatorState,
        metrics: this.metrics.group(uid),
        currentProcessingTime: Date.now,
        requestProcessingTimeCallback: (timestamp) => this.#timers.requestCallback(index, timestamp),
        output: (tag, record, timestamp) => this.#chain.sideOutput(index, tag, record, timestamp),
        executeMail: (action) => this.#mailbox.put({ kind: 'operator', action }),
        emit: (records, timestamps) => this.#chain.emitFrom(index, records, timestamps),
        emitWatermark: (watermark) => this.#chain.emitWatermarkFrom(index, watermark),
      };
      const opened = operator.open(context);
      if (isThenable(opened)) await opened;
    }
    // An unaligned checkpoint's records in flight on this task's channels: replayed before any new input.
    const network = this.#networkInput;
    const channelState = network === undefined ? undefined : await state.channelState(this.#channelStateUid);
    if (network !== undefined && channelState !== undefined) {
      const what = `${env.restore?.kind ?? 'checkpoint'} ${env.restore?.checkpointId} for ${this.name}`;
      network.recover(readChannelState(channelState, env.inputChannels, (channel) => env.inputIndexOf?.get(channel) ?? 0, what));
    }
  }

  /** The uid this task's channel state is stored under (its head operator's, with a suffix). */
  get #channelStateUid(): string {
    return channelStateUid(this.env.uids[this.env.vertex.nodeIds[0] as number] as string);
  }

  /** After open: whether an operator's restore left work of the restored snapshot to a later checkpoint (StreamOperator.restoredIncompletely). */
  get restoredIncompletely(): boolean {
    return this.#chain.operators.some((chained) => chained.operator.restoredIncompletely());
  }

  /** A source task's splits as its latest checkpoint took them (cluster mode names their offsets in its checkpoint record). */
  get sourceSplits(): readonly unknown[] {
    return this.#sourceInput?.splits ?? [];
  }

  /** The watermark the task's chain has reached. */
  get currentWatermark(): number {
    return this.#chain.currentWatermark;
  }

  /** Starts the loop (a source reads; other tasks run when input arrives). */
  start(): void {
    this.#mailbox.start();
  }

  /** A message arrived on one of the task's input channels. */
  deliver(message: ChannelMessage): void {
    this.#networkInput?.push(message);
    this.#mailbox.resume();
  }

  triggerCheckpoint(location: CheckpointLocation, stop?: StopMode): void {
    this.#mailbox.put({ kind: 'trigger-checkpoint', location, stop });
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.#mailbox.put({ kind: 'notify-checkpoint-complete', checkpointId });
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.#mailbox.put({ kind: 'notify-checkpoint-aborted', checkpointId });
  }

  /** Output credit came back. */
  onCredit(): void {
    if (this.#chain.outputsAvailable) this.metrics.relieved(Date.now());
    this.#mailbox.resume();
  }

  async close(): Promise<void> {
    this.#mailbox.close();
    this.#timers.close();
    this.#networkInput?.close();
    await this.#chain.close();
    await this.#sourceInput?.close();
  }

  async #runMail(mail: Mail): Promise<void> {
    switch (mail.kind) {
      case 'trigger-checkpoint': {
        const source = this.#sourceInput;
        if (source === undefined) return; // only sources are triggered; the others follow the barriers
        const notReady = source.checkpointNotReady();
        if (notReady !== undefined) {
          this.#checkpoints.abortCheckpoint(mail.location.checkpointId, { reason: 'CHECKPOINT_DECLINED_TASK_NOT_READY', message: notReady });
          return;
        }
        const options = checkpointOptionsFor(this.env.config.checkpointing, mail.location, Date.now());
        await source.triggerCheckpoint(mail.location, mail.stop, () => this.#checkpoints.checkpointState(mail.location, 0, options));
        return;
      }
      case 'notify-checkpoint-complete':
        await this.#checkpoints.notifyCheckpointComplete(mail.checkpointId);
        return;
      case 'notify-checkpoint-aborted':
        this.#networkInput?.checkpointAborted(mail.checkpointId);
        await this.#checkpoints.notifyCheckpointAborted(mail.checkpointId);
        return;
      case 'processing-time':
        this.#timers.fired(mail.operatorIndex);
        await this.#chain.onProcessingTime(mail.operatorIndex, Date.now());
        return;
      case 'operator':
        await mail.action();
        return;
    }
  }

  async #endInput(): Promise<void> {
    if (this.#endOfInput) return;
    this.#endOfInput = true;
    await this.#chain.endInput();
    this.env.toMaster({ type: 'endOfData', vertexId: this.env.vertex.id, subtaskIndex: this.env.subtaskIndex });
  }

  /** The state of the task's nodes, as checkpoints snapshot it: a source's splits first, then the chain's operators. */
  #stateHolders(): readonly OperatorStateHolder[] {
    const operators: readonly ChainedOperator[] = this.#chain.operators;
    return this.#sourceInput === undefined ? operators : [this.#sourceInput.stateHolder, ...operators];
  }

  #checkpointListeners(): readonly CheckpointListener[] {
    return this.#sourceInput === undefined ? [this.#chain] : [this.#chain, this.#sourceInput];
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    const weirError =
      error instanceof WeirError
        ? error
        : new WeirError('TASK_FAILED', `${this.name} failed: ${error instanceof Error ? withUserCodeLocation(error.message, error.stack) : String(error)}`, {
            fault: 'user',
            cause: error,
          });
    if (error instanceof Error && !(error instanceof WeirError) && error.stack) weirError.stack = error.stack;
    this.env.toMaster({ type: 'failed', vertexName: this.env.vertex.name, subtaskIndex: this.env.subtaskIndex, error: weirError.serialize() });
  }
}
