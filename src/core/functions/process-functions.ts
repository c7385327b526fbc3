import type { UserMetricGroup } from '../metrics/metric-group.ts';
import type { StateDescriptor } from '../state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../state/state-key.ts';
import type { TimeDomain } from '../time/time-domain.ts';
import type { OutputTag } from './output-tag.ts';

/** Collects the records a function emits. */
export interface Collector<T> {
  collect(record: T): void;
}

/** What a rich function sees when it opens: where it runs, and its keyed state. */
export interface RuntimeContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  /** The function's own metrics (counters, gauges, histograms, meters), under its operator. Register them in `open`. */
  readonly metrics: UserMetricGroup;
  /** Keyed state scoped to the key of the record being processed. Call it in `open`, keep the handle. */
  getState<S>(descriptor: StateDescriptor<S>): S;
}

/**
 * Time and timers (Flink's TimerService). Timers are keyed state: one per key, timestamp and time
 * domain, checkpointed and moved with their key group on rescaling. Event-time timers fire when
 * the watermark reaches their timestamp; processing-time timers when the clock does. Timers exist
 * only on keyed streams: elsewhere registering one is an error.
 */
export interface TimerService {
  currentProcessingTime(): number;
  /** The operator's current event time: its last watermark (-Infinity before the first). */
  currentWatermark(): number;
  registerProcessingTimeTimer(timestamp: number): void;
  deleteProcessingTimeTimer(timestamp: number): void;
  registerEventTimeTimer(timestamp: number): void;
  deleteEventTimeTimer(timestamp: number): void;
}

/** What a process function sees of the record being processed. */
export interface ProcessContext {
  /** The record's event time, or undefined when it has none (no watermark strategy upstream). */
  timestamp(): number | undefined;
  readonly timerService: TimerService;
  /** Emits `value` on the side output `tag`, with the current record's timestamp. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

export interface KeyedContext<K extends KeyLike> extends ProcessContext {
  getCurrentKey(): K;
}

/** The context of `onTimer`: for an event-time timer, `timestamp()` is the timer's time. */
export interface OnTimerContext<K extends KeyLike> extends KeyedContext<K> {
  timeDomain(): TimeDomain;
}

/** Flink's KeyedProcessFunction: per-record logic with keyed state, timers and side outputs. */
export interface KeyedProcessFunction<K extends KeyLike, IN, OUT> {
  open?(context: RuntimeContext): void;
  processElement(value: IN, context: KeyedContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, context: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/** Flink's ProcessFunction, on a stream that is not keyed: per-record logic with side outputs (no keyed state, no timers). */
export interface ProcessFunction<IN, OUT> {
  open?(context: Omit<RuntimeContext, 'getState'>): void;
  processElement(value: IN, context: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

/** Flink's CoProcessFunction: two streams into one function (connect), not keyed. */
export interface CoProcessFunction<IN1, IN2, OUT> {
  open?(context: Omit<RuntimeContext, 'getState'>): void;
  processElement1(value: IN1, context: ProcessContext, out: Collector<OUT>): void;
  processElement2(value: IN2, context: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

/**
 * Flink's KeyedCoProcessFunction: two streams keyed by the same key into one function, sharing its
 * keyed state and timers: records of both inputs with equal keys meet in the same subtask.
 */
export interface KeyedCoProcessFunction<K extends KeyLike, IN1, IN2, OUT> {
  open?(context: RuntimeContext): void;
  processElement1(value: IN1, context: KeyedContext<K>, out: Collector<OUT>): void;
  processElement2(value: IN2, context: KeyedContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, context: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/** What an interval join's function sees of a joined pair (Flink's ProcessJoinFunction.Context). */
export interface ProcessJoinContext {
  leftTimestamp(): number;
  rightTimestamp(): number;
  /** The pair's timestamp: the later of the two. */
  timestamp(): number;
  output<X>(tag: OutputTag<X>, value: X): void;
}

/** Flink's ProcessJoinFunction: called once per pair an interval join finds. */
export interface ProcessJoinFunction<IN1, IN2, OUT> {
  open?(context: RuntimeContext): void;
  processElement(left: IN1, right: IN2, context: ProcessJoinContext, out: Collector<OUT>): void;
  close?(): void;
}
