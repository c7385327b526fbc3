import type { StateKey } from '../state/key-group-range-assignment.ts';
import type { StateDescriptor } from '../state/state-descriptors.ts';

/** Collects the records a function emits. */
export interface Collector<T> {
  collect(record: T): void;
}

/** What a rich function sees when it opens: where it runs, and its keyed state. */
export interface RuntimeContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  /** Keyed state scoped to the key of the record being processed. Call it in `open`, keep the handle. */
  getState<S>(descriptor: StateDescriptor<S>): S;
}

export interface TimerService {
  currentProcessingTime(): number;
  registerProcessingTimeTimer(timestamp: number): void;
  deleteProcessingTimeTimer(timestamp: number): void;
}

export interface KeyedContext<K extends StateKey> {
  getCurrentKey(): K;
  readonly timerService: TimerService;
}

/** Flink's KeyedProcessFunction: per-record logic with keyed state and timers. */
export interface KeyedProcessFunction<K extends StateKey, IN, OUT> {
  open?(context: RuntimeContext): void;
  processElement(value: IN, context: KeyedContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, context: KeyedContext<K>, out: Collector<OUT>): void;
  close?(): void;
}
