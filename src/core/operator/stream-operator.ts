import type { OperatorMetricGroup } from '../metrics/metric-group.ts';
import type { KeyedStateBackend } from '../state/keyed-state-backend.ts';
import type { OperatorStateStore } from '../state/operator-state-store.ts';
import type { TaskOwner } from './task-owner.ts';

/** What an operator instance knows about where it runs. */
export interface OperatorContext {
  readonly jobName: string;
  readonly operatorName: string;
  readonly uid: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  /** 0 on the first run, then one more per restart of the job. */
  readonly attemptNumber: number;
  /** The checkpoint the job was restored from, if any. */
  readonly restoredCheckpointId: number | undefined;
  /** The restored savepoint's transactions were committed before it was reported (two-phase-commit sinks commit nothing again). */
  readonly restoredTransactionsCommitted: boolean;
  /** A later snapshot than the restored one completed (an older checkpoint is restored on purpose): its transactions were committed already. */
  readonly restoredCheckpointSupersededBy?: number | undefined;
  readonly checkpointingMode: 'exactly-once' | 'at-least-once' | 'off';
  /** Cluster mode: the producer this run of the task was fenced in with (task-owner.ts orders the task's runs); undefined in one process. */
  readonly taskOwner?: TaskOwner | undefined;
  /** Keyed state, for operators after a keyBy. */
  readonly keyedState: KeyedStateBackend | undefined;
  readonly operatorState: OperatorStateStore;
  /** The operator's own metrics (shown per operator in the REST API, the dashboard and /metrics). */
  readonly metrics: OperatorMetricGroup;
  /** The task's processing time (Flink's ProcessingTimeService.getCurrentProcessingTime): the clock, or a test driver's. */
  currentProcessingTime(): number;
  /** Asks the task to call {@link StreamOperator.onProcessingTime} at (or soon after) this time. */
  requestProcessingTimeCallback(timestamp: number): void;
  /**
   * Emits `record` on the side output `tag` (Flink's `Output.collect(OutputTag, record)`): it goes
   * to the streams that `getSideOutput(tag)` made of this operator, after the current call returns.
   * `timestamp` is the record's event time, NaN for none. Returns false when no stream reads the
   * tag (the record goes nowhere: callers that must not lose records silently count it).
   */
  output(tag: string, record: unknown, timestamp: number): boolean;
  /**
   * Runs `action` on the task's loop as soon as it is free (Flink's MailboxExecutor), for work that
   * finishes outside any call of the operator (an async request's result). A throw fails the task.
   */
  executeMail(action: () => Promise<void>): void;
  /** On the task's loop only (in a call or a mail): sends records down the chain after this operator, at once. */
  emit(records: unknown[], timestamps: number[] | undefined): Promise<void>;
  /** On the task's loop only: what follows this operator reached event time `watermark` (for an operator that {@link StreamOperator.holdsWatermarks}). */
  emitWatermark(watermark: number): Promise<void>;
}

/**
 * The contract every operator of a chain follows (Flink's StreamOperator, batch-wise). Hooks do
 * nothing unless overridden. A chain calls its operators directly, batch by batch: each one takes
 * the batch its predecessor returned.
 *
 * Event time: a batch may come with the records' timestamps (`timestamps[i]` is the event time of
 * `batch[i]`, NaN for a record without one; the array is undefined when no record has one, as in
 * a job without a watermark strategy). An operator that returns records sets
 * {@link outputTimestamps} to theirs in the same call (the task clears it before each call);
 * when it leaves it undefined, its output carries no timestamps.
 */
export abstract class StreamOperator<IN, OUT> {
  /** The event times of the records the current call returns, index by index; undefined: none. */
  outputTimestamps: number[] | undefined = undefined;

  /**
   * True: `processWatermark` does not pass the watermark on; the operator does, with
   * `context.emitWatermark`, once what it holds from before the watermark is out (async I/O).
   */
  readonly holdsWatermarks: boolean = false;

  open(_context: OperatorContext): void | Promise<void> {}

  abstract processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] | Promise<OUT[]>;

  /** A batch of the second input of a two-input operator (connect, joins); `processBatch` takes the first. */
  processBatch2(_batch: unknown[], _timestamps?: readonly number[]): OUT[] | Promise<OUT[]> {
    throw new Error(`${this.constructor.name} has one input`);
  }

  /**
   * Event time reached `watermark` (Flink's processWatermark): fire the event-time timers at or
   * before it and return what they emit. The task forwards the watermark down the chain and to the
   * next tasks after this returns. It rises strictly from call to call; +Infinity at end of input.
   */
  processWatermark(_watermark: number): OUT[] | Promise<OUT[]> {
    return [];
  }

  /** Processing time reached a time this operator asked for. */
  onProcessingTime(_now: number): OUT[] | Promise<OUT[]> {
    return [];
  }

  /** Called as the barrier passes, before the state backends are snapshotted. */
  snapshotState(_checkpointId: number): void | Promise<void> {}

  notifyCheckpointComplete(_checkpointId: number): void | Promise<void> {}

  /**
   * After open: whether its restore left work of the restored snapshot undone that only a later
   * checkpoint of this run does (a two-phase-commit sink's rows kept in the snapshot, written again
   * into its next transaction). Then the snapshot must not be recorded as committed
   * (committed-checkpoint-recorder.ts): a start from it again must redo that work.
   */
  restoredIncompletely(): boolean {
    return false;
  }

  notifyCheckpointAborted(_checkpointId: number): void | Promise<void> {}

  /** Every input has ended (bounded job): emit what is still held. */
  endInput(): OUT[] | Promise<OUT[]> {
    return [];
  }

  close(): void | Promise<void> {}
}
