import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { Source, SourceBatch, SourceReader } from '../../core/connector/source.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { WatermarkStrategy } from '../../core/event-time/watermark-strategy.ts';
import type { ListState } from '../../core/state/state-types.ts';
import type { SourceNode } from '../../graph/stream-graph.ts';
import { computeOperatorIndexForKeyGroup } from '../../state/key-group-range-assignment.ts';
import type { OperatorStateBackend } from '../../state/operator-state-backend.ts';
import type { TaskMetrics } from '../metrics/task-metrics.ts';
import { SourceWatermarks } from '../watermarks/source-watermarks.ts';
import type { WatermarkEvent } from '../watermarks/status-watermark-valve.ts';
import { isThenable } from './is-thenable.ts';
import type { InputStatus, MailboxDefaultAction } from './mailbox-processor.ts';
import type { OperatorChain, OperatorStateHolder } from './operator-chain.ts';
import type { CheckpointListener } from './subtask-checkpoint-coordinator.ts';

const SPLITS_STATE = 'source-splits';
const ALL_SPLITS_STATE = 'source-all-splits';

export interface SourceInputOptions {
  node: SourceNode;
  uid: string;
  operatorState: OperatorStateBackend;
  /** Whether the restored checkpoint holds this source (it then keeps its restored splits). */
  restored: boolean;
  subtaskIndex: number;
  parallelism: number;
  /** The job's key groups (for a source whose stream is reinterpreted as keyed). */
  maxParallelism: number;
  attemptNumber: number;
  batchSize: number;
  /**
   * The splits are fixed from outside (cluster mode): the reader discovers none, and a checkpoint
   * the reader cannot take yet is held until it can (the task is its own coordinator: it takes no
   * other checkpoint meanwhile), instead of being declined.
   */
  fixedSplits?: boolean;
  /** The batch size of each poll when it follows back pressure (`network.debloat`, a SourceBatchSizer); else `batchSize`. */
  batchSizer?: (() => number) | undefined;
  chain: OperatorChain;
  metrics: TaskMetrics;
  /** The source read its last split: the task's input has ended. */
  onEndOfInput: () => Promise<void>;
}

/**
 * The input of a source task (Flink's SourceOperator as a StreamTaskSourceInput): the source's
 * reader, the splits it reads (the task's checkpointed operator state, redistributed on a restore
 * at another parallelism) and, with a watermark strategy, the watermarks per split. At a
 * checkpoint's trigger the reader's positions become the split state before the task snapshots;
 * a stopping savepoint stops the reading after its barrier.
 */
export class StreamTaskSourceInput implements MailboxDefaultAction, CheckpointListener {
  readonly #options: SourceInputOptions;
  readonly #reader: SourceReader<unknown>;
  readonly #splits: ListState<unknown>;
  readonly #allSplits: ListState<unknown>;
  readonly #strategy: WatermarkStrategy<unknown> | undefined;
  readonly #splitId: ((split: unknown) => string) | undefined;
  /** Timestamps and watermarks, when the source has a watermark strategy (made in open, once the splits are known). */
  #watermarks: SourceWatermarks | undefined;
  /** Watermark events the source's watermarks produced, to emit in order. */
  #watermarkEvents: WatermarkEvent[] = [];
  #finished = false;
  /** A stopping savepoint this source task took: it reads nothing more unless that savepoint is aborted. */
  #stopping: { checkpointId: number; mode: StopMode } | undefined;
  /** A checkpoint's trigger held until the reader can take it (cluster mode, {@link SourceInputOptions.fixedSplits}). */
  #held: { location: CheckpointLocation; stop: StopMode | undefined; checkpointState: () => Promise<void> } | undefined;

  constructor(options: SourceInputOptions) {
    this.#options = options;
    const { node, operatorState, subtaskIndex, parallelism, attemptNumber } = options;
    this.#strategy = node.watermarkStrategy?.hasWatermarks ? node.watermarkStrategy : undefined;
    this.#splitId = node.source.splitId?.bind(node.source);
    this.#reader = node.source.createReader({
      subtaskIndex,
      parallelism,
      attemptNumber,
      tracksSplits: this.#strategy !== undefined && this.#splitId !== undefined,
      ...(options.fixedSplits === true ? { discoversSplits: false } : {}),
      metrics: options.metrics.group(options.uid),
      output: (tag, record, timestamp) => options.chain.sideOutput(-1, tag, record, timestamp),
      uid: options.uid,
      name: node.name,
    });
    this.#splits = operatorState.getListState<unknown>(SPLITS_STATE);
    // Every subtask's splits, as union state: a source can tell a new split from one another subtask reads.
    this.#allSplits = operatorState.getUnionListState<unknown>(ALL_SPLITS_STATE);
  }

  /** The source's state, for the checkpoint path. */
  get stateHolder(): OperatorStateHolder {
    return { uid: this.#options.uid, keyed: undefined, operatorState: this.#options.operatorState };
  }

  /** The splits as the latest checkpoint (or the restore) left them. */
  get splits(): readonly unknown[] {
    return this.#splits.get();
  }

  /** A fresh start gives this subtask its share of the initial splits; then the reader opens on its splits. */
  async open(): Promise<void> {
    const { node, restored, subtaskIndex, parallelism } = this.#options;
    const source: Source<unknown> = node.source;
    if (!restored) {
      const initial = await source.createInitialSplits(parallelism);
      this.#splits.update(initial.filter((_split, index) => index % parallelism === subtaskIndex));
      this.#allSplits.update(initial);
    }
    if (node.keyGroupAssignment === true) this.#assignByKeyGroup(source, this.#allSplits.get());
    const strategy = this.#strategy;
    const splitId = this.#splitId;
    this.#watermarks =
      strategy === undefined
        ? undefined
        : new SourceWatermarks({
            strategy: strategy as never,
            sourceName: node.name,
            splitIds: splitId === undefined ? undefined : this.#splits.get().map((split) => splitId(split)),
            now: Date.now(),
          });
    this.#watermarks?.start(this.#watermarkEvents); // a subtask without splits is idle from the start
    const opened = this.#reader.open(this.#splits.get(), this.#allSplits.get());
    if (isThenable(opened)) await opened;
  }

  /**
   * A stream reinterpreted as keyed: split i holds key group `keyGroupOfSplit(i)` and belongs to the
   * subtask that owns that key group, on a fresh start and on every restore (from every old
   * subtask's splits, the union state), so a key's state and its split stay together. The splits
   * must hold each key group 0 .. maxParallelism - 1. But a cluster task restored from its own
   * record has the union of one task, its own splits, so fewer key groups (cluster-plan.ts checked
   * the partition count at the start): they must all be its own key groups'.
   */
  #assignByKeyGroup(source: Source<unknown>, all: unknown[]): void {
    const { node, subtaskIndex, parallelism, maxParallelism, fixedSplits, restored } = this.#options;
    const keyGroupOf = (split: unknown) => (source.keyGroupOfSplit as (split: unknown) => number)(split);
    const groups = new Set(all.map(keyGroupOf));
    const outside = [...groups].filter((group) => !Number.isInteger(group) || group < 0 || group >= maxParallelism);
    const wholeRange = !(fixedSplits === true && restored && groups.size < maxParallelism);
    if ((wholeRange && groups.size !== maxParallelism) || outside.length > 0) {
      throw new WeirError(
        'REINTERPRET_PARTITIONS',
        `source "${node.name}" is reinterpreted as keyed, so its split (partition) p must hold key group p, but its splits hold ${groups.size} key groups for the job's maxParallelism of ${maxParallelism}${outside.length > 0 ? ` (${outside.slice(0, 3).join(', ')} outside 0-${maxParallelism - 1})` : ''}`,
        {
          hint: `give the job maxParallelism ${groups.size} (the topic's partition count), write the topic with partitioner: keyGroupPartitioner, or use keyBy`,
          fault: 'user',
        },
      );
    }
    const mine = all.filter((split) => computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroupOf(split)) === subtaskIndex);
    if (!wholeRange && mine.length !== all.length) {
      throw new WeirError(
        'REINTERPRET_PARTITIONS',
        `source "${node.name}" is reinterpreted as keyed, but task ${subtaskIndex}'s checkpoint holds splits of another task's key groups`,
        {
          hint: 'the topic was written with another partitioner or repartitioned since the checkpoint: write it with partitioner: keyGroupPartitioner',
          fault: 'user',
        },
      );
    }
    this.#splits.update(mine);
  }

  /** One poll of the reader: its records through the chain, its watermarks after them. */
  async processInput(): Promise<InputStatus> {
    if (this.#finished || this.#stopping !== undefined) return 'END_OF_INPUT';
    const { chain, metrics } = this.#options;
    const batchSize = this.#options.batchSizer?.() ?? this.#options.batchSize;
    const watermarks = this.#watermarks;
    if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents();
    const reader = this.#reader;
    let polled: unknown[] | SourceBatch<unknown> | null | Promise<unknown[] | SourceBatch<unknown> | null>;
    if (watermarks !== undefined && reader.pollNextBatch !== undefined) polled = reader.pollNextBatch(batchSize);
    else polled = reader.pollNext(batchSize);
    if (isThenable(polled)) polled = await polled;
    chain.flushSideOutputs(); // the reader's dead letters, before any barrier that covers their offsets
    if (polled === null) {
      await this.#releaseHeld();
      this.#finished = true;
      await this.#options.onEndOfInput();
      return 'END_OF_INPUT';
    }
    const records = Array.isArray(polled) ? polled : polled.records;
    if (watermarks === undefined) {
      if (records.length > 0) {
        metrics.recordsIn += records.length;
        await chain.processBatch(records, undefined, 0);
      }
      await this.#releaseHeld();
      return records.length > 0 ? 'MORE_AVAILABLE' : 'POLL_LATER';
    }
    if (records.length > 0) {
      const batch = Array.isArray(polled) ? undefined : polled;
      const timestamps = watermarks.assign(records, batch?.timestamps, batch?.splitIds, this.#watermarkEvents);
      if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents(); // an idle split's ACTIVE goes before its records
      metrics.recordsIn += records.length;
      await chain.processBatch(records, timestamps, 0);
    }
    const finished = Array.isArray(polled) ? undefined : polled.finishedSplitIds;
    if (finished !== undefined && finished.length > 0) watermarks.releaseSplits(finished, this.#watermarkEvents);
    watermarks.onProcessingTime(Date.now(), this.#watermarkEvents);
    if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents();
    await this.#releaseHeld();
    return records.length > 0 ? 'MORE_AVAILABLE' : 'POLL_LATER';
  }

  /** Why the reader cannot take a checkpoint now (the checkpoint is then declined), or undefined; in cluster mode always undefined (the trigger is held instead). */
  checkpointNotReady(): string | undefined {
    if (this.#options.fixedSplits === true) return undefined;
    return this.#reader.checkpointNotReady?.();
  }

  /**
   * The trigger of a checkpoint: the reader's positions become the split state, then the task
   * snapshots (`checkpointState`). Stop with drain sends the end of event time first, so every
   * window and event-time timer downstream fires and its output is part of the savepoint.
   */
  async triggerCheckpoint(location: CheckpointLocation, stop: StopMode | undefined, checkpointState: () => Promise<void>): Promise<void> {
    // Cluster mode: a declined checkpoint would fail the task (its own coordinator has no next one to
    // take), and a restore would start the reader's unfinished work (a CDC snapshot) over, to be
    // declined again. The barrier waits for the reader instead, behind the records it emits meanwhile.
    if (this.#options.fixedSplits === true && this.#reader.checkpointNotReady?.() !== undefined) {
      this.#held = { location, stop, checkpointState };
      return;
    }
    if (stop === 'drain') await this.#options.chain.advanceWatermark(Number.POSITIVE_INFINITY);
    const splits = this.#reader.snapshotState(location.checkpointId);
    this.#splits.update(splits);
    this.#allSplits.update(splits);
    await checkpointState();
    // A stopping savepoint: nothing is read after its barrier, until it completes (the job stops)
    // or is aborted (reading resumes; after a drain the job restarts instead).
    if (stop !== undefined) this.#stopping = { checkpointId: location.checkpointId, mode: stop };
  }

  /** The held trigger, once the reader can take it: after the records that made it ready, before the next poll's. */
  async #releaseHeld(): Promise<void> {
    const held = this.#held;
    if (held === undefined || this.#reader.checkpointNotReady?.() !== undefined) return;
    this.#held = undefined;
    await this.triggerCheckpoint(held.location, held.stop, held.checkpointState);
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    const notified = this.#reader.notifyCheckpointComplete?.(checkpointId);
    if (isThenable(notified)) await notified;
  }

  notifyCheckpointAborted(checkpointId: number): void {
    if (this.#stopping?.checkpointId !== checkpointId) return;
    if (this.#stopping.mode === 'drain') {
      // The end-of-event-time watermark is out and cannot be taken back: start again from the latest checkpoint.
      throw new WeirError('STOP_FAILED', `stop with drain failed: savepoint ${checkpointId} was aborted after the end of event time was sent`, {
        hint: 'the job restarts from its latest checkpoint; try the stop again',
        fault: 'external',
      });
    }
    this.#stopping = undefined; // the stop failed: read on
  }

  async close(): Promise<void> {
    const closed = this.#reader.close();
    if (isThenable(closed)) await closed;
  }

  /** Emits what the source's watermarks produced: statuses downstream, watermarks through the chain and downstream. */
  async #emitWatermarkEvents(): Promise<void> {
    const events = this.#watermarkEvents;
    this.#watermarkEvents = [];
    for (const event of events) {
      if (event.kind === 'watermark') await this.#options.chain.advanceWatermark(event.watermark);
      else this.#options.chain.broadcastWatermarkStatus(event.kind === 'idle');
    }
  }
}
