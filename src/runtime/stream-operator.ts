import type { HeapKeyedStateBackend } from '../state/heap-keyed-state-backend.ts';
import type { OperatorStateBackend } from '../state/operator-state-backend.ts';
import type { OperatorMetricGroup } from './metrics/task-metrics.ts';

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
  readonly checkpointingMode: 'exactly-once' | 'at-least-once' | 'off';
  /** Keyed state, for operators after a keyBy. */
  readonly keyedState: HeapKeyedStateBackend | undefined;
  readonly operatorState: OperatorStateBackend;
  /** The operator's own metrics (shown per operator in the REST API, the dashboard and /metrics). */
  readonly metrics: OperatorMetricGroup;
  /** Asks the task to call {@link StreamOperator.onProcessingTime} at (or soon after) this time. */
  requestProcessingTimeCallback(timestamp: number): void;
}

/**
 * The contract every operator of a chain follows (Flink's StreamOperator, batch-wise). Hooks do
 * nothing unless overridden. A chain calls its operators directly, batch by batch: each one takes
 * the batch its predecessor returned.
 */
export abstract class StreamOperator<IN, OUT> {
  open(_context: OperatorContext): void | Promise<void> {}

  abstract processBatch(batch: IN[]): OUT[] | Promise<OUT[]>;

  /** Processing time reached a time this operator asked for. */
  onProcessingTime(_now: number): OUT[] | Promise<OUT[]> {
    return [];
  }

  /** Called as the barrier passes, before the state backends are snapshotted. */
  snapshotState(_checkpointId: number): void | Promise<void> {}

  notifyCheckpointComplete(_checkpointId: number): void | Promise<void> {}

  notifyCheckpointAborted(_checkpointId: number): void | Promise<void> {}

  /** Every input has ended (bounded job): emit what is still held. */
  endInput(): OUT[] | Promise<OUT[]> {
    return [];
  }

  close(): void | Promise<void> {}
}
