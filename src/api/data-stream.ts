import type { Sink } from '../core/connector/sink.ts';
import type { BroadcastProcessFunction, KeyedBroadcastProcessFunction } from '../core/functions/broadcast-process-functions.ts';
import type { OutputTag } from '../core/functions/output-tag.ts';
import type {
  Collector,
  CoProcessFunction,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  ProcessFunction,
  ProcessJoinFunction,
} from '../core/functions/process-functions.ts';
import type { MapStateDescriptor } from '../core/state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { Trigger } from '../core/windowing/trigger.ts';
import type { GlobalWindow, Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import type { AggregateFunction, ProcessWindowFunction, ReduceFunction } from '../core/windowing/window-functions.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
import type { OperatorOptions, ProcessingOptions, Upstream } from './stream-transformations.ts';

/**
 * The DataStream API's types: every stream and builder a job's `build(env)` sees, with Flink's
 * names. They are interfaces because they refer to each other (`keyBy` gives a KeyedStream, whose
 * `window` gives a WindowedStream, whose `aggregate` gives a DataStream again); the classes that
 * implement them stay internal. Builders never mutate: each call adds an operator to the job's
 * graph and returns a new stream whose type is the operator's output, so the editor knows the
 * record type at every step.
 */

export type { OperatorOptions, ProcessingOptions } from './stream-transformations.ts';

/** A stream of records of type T (Flink's DataStream). */
export interface DataStream<T> {
  /** @internal */
  readonly graph: StreamGraph;
  /** @internal */
  readonly upstream: Upstream;

  map<R>(fn: (value: T) => R, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  /** Keeps the records the predicate accepts; a type guard (`(v): v is Paid => ...`) narrows the stream's type. */
  filter<S extends T>(predicate: (value: T) => value is S, options?: ProcessingOptions): SingleOutputStreamOperator<S>;
  filter(predicate: (value: T) => boolean, options?: ProcessingOptions): SingleOutputStreamOperator<T>;
  flatMap<R>(fn: (value: T) => Iterable<R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  /** Per-record logic with side outputs (`context.output(tag, value)`); keyed state and timers need `keyBy(...).process(...)`. */
  process<R>(fn: ProcessFunction<T, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  /** Partitions the stream by key: records with equal keys go to the same subtask, and keyed state is scoped to the key. */
  keyBy<K extends KeyLike>(keySelector: (value: T) => K): KeyedStream<T, K>;
  /** Spreads records round-robin over the next operator's subtasks. */
  rebalance(): DataStream<T>;
  /** Sends every record to every subtask of the next operator. */
  broadcast(): DataStream<T>;
  /**
   * The broadcast state pattern (Flink's broadcast(descriptor)): every record to every subtask of
   * the operator this stream is connected to, whose broadcast side keeps them in the broadcast
   * state these map-state descriptors name: `events.keyBy(...).connect(rules.broadcast(ruleState)).process(fn)`.
   */
  broadcast(...descriptors: [MapStateDescriptor<unknown, unknown>, ...MapStateDescriptor<unknown, unknown>[]]): BroadcastStream<T>;
  /** Merges streams of the same type. */
  union(...others: DataStream<T>[]): SingleOutputStreamOperator<T>;
  /**
   * Two streams into one function (Flink's connect): `a.connect(b).process(coProcessFunction)`, or
   * keyed on both sides with shared keyed state and timers:
   * `a.connect(b).keyBy(keyOfA, keyOfB).process(keyedCoProcessFunction)`.
   */
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  /** With a broadcast stream: `process(broadcastProcessFunction)` (read-only broadcast state on this side). */
  connect<T2>(other: BroadcastStream<T2>): BroadcastConnectedStream<T, T2>;
  /** A join of two streams over windows (Flink's join): `a.join(b).where(keyOfA).equalTo(keyOfB).window(assigner).apply(fn)`. */
  join<T2>(other: DataStream<T2>): JoinedStreams<T, T2>;
  /** Both streams' records of a key and window together (Flink's coGroup): `a.coGroup(b).where(...).equalTo(...).window(...).apply(fn)`. */
  coGroup<T2>(other: DataStream<T2>): CoGroupedStreams<T, T2>;
  sinkTo(sink: Sink<T>, options?: OperatorOptions): void;
}

/**
 * The output of an operator (Flink's SingleOutputStreamOperator): a stream, plus the side outputs
 * the operator emits with `context.output(tag, value)` (and a window's late records).
 */
export interface SingleOutputStreamOperator<T> extends DataStream<T> {
  /** The records the operator emitted to `tag`. */
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X>;
}

/** A stream broadcast to every subtask of the operator it is connected to, with the broadcast state it fills (Flink's BroadcastStream). */
export interface BroadcastStream<T> {
  /** @internal */
  readonly upstream: Upstream;
  /** @internal */
  readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
  /** Never set: carries the record type. */
  readonly recordType?: T;
}

/** A stream that is not keyed, connected to a broadcast stream (Flink's BroadcastConnectedStream). */
export interface BroadcastConnectedStream<T, B> {
  process<R>(fn: BroadcastProcessFunction<T, B, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** A keyed stream connected to a broadcast stream: keyed state and timers on the main side, every key's state on the broadcast side. */
export interface KeyedBroadcastConnectedStream<T, K extends KeyLike, B> {
  process<R>(fn: KeyedBroadcastProcessFunction<K, T, B, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** A stream partitioned by key (Flink's KeyedStream). */
export interface KeyedStream<T, K extends KeyLike> extends DataStream<T> {
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  /** With a broadcast stream: `process(keyedBroadcastProcessFunction)`. */
  connect<T2>(other: BroadcastStream<T2>): KeyedBroadcastConnectedStream<T, K, T2>;
  /** Per-record logic with keyed state, timers (event and processing time) and side outputs. */
  process<R>(fn: KeyedProcessFunction<K, T, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  /** A running reduction per key: emits the new reduced value after every record. */
  reduce(reduce: (accumulated: T, value: T) => T, options?: ProcessingOptions): SingleOutputStreamOperator<T>;
  /**
   * Windows per key (Flink's window): `keyed.window(TumblingEventTimeWindows.of('1m')).aggregate(...)`.
   * Event-time windows need a watermark strategy on the sources.
   */
  window<W extends Window>(assigner: WindowAssigner<T, W> | WindowAssigner<unknown, W>): WindowedStream<T, K, W>;
  /** Windows of `size` records per key (Flink's countWindow): global windows fired and purged every `size` records. */
  countWindow(size: number): WindowedStream<T, K, GlobalWindow>;
  /**
   * Joins with another keyed stream on event time (Flink's intervalJoin): records of this stream
   * with records of `other` of the same key whose timestamps lie within [lower, upper] of theirs.
   * `keyed.intervalJoin(otherKeyed).between('-5s', '5s').process(fn)`.
   */
  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2, K>;
}

/**
 * A keyed stream cut into windows (Flink's WindowedStream): choose a trigger, the allowed lateness
 * and a late side output, then what a window computes: `reduce`, `aggregate` (each keeps one value
 * per window) or `process` (keeps every record).
 *
 * ```ts
 * keyed
 *   .window(TumblingEventTimeWindows.of('1m'))
 *   .allowedLateness('10s')
 *   .sideOutputLateData(late)
 *   .aggregate(sumOfAmounts, { process(account, context, [total], out) { out.collect({ account, minute: context.window.start, total }); } }, { uid: 'totals' });
 * ```
 */
export interface WindowedStream<T, K extends KeyLike, W extends Window> {
  /** Replaces the assigner's default trigger (e.g. CountTrigger.of(100), ContinuousEventTimeTrigger.of('10s')). */
  trigger(trigger: Trigger<T, W> | Trigger<unknown, W> | Trigger<unknown, Window>): WindowedStream<T, K, W>;
  /**
   * How long after a window's end (in event time) it keeps its state: a late record within it
   * fires the window again with the record added; later ones go to the late side output. Default 0.
   */
  allowedLateness(lateness: number | string): WindowedStream<T, K, W>;
  /** Late records (past the allowed lateness) go to this side output: `result.getSideOutput(tag)`. Without one they are counted in numLateRecordsDropped. */
  sideOutputLateData(tag: OutputTag<T>): WindowedStream<T, K, W>;
  /** Reduces each window's records to one value (kept as they arrive); emits it, or hands it to `windowFunction`. */
  reduce(fn: ReduceFunction<T>, options?: ProcessingOptions): SingleOutputStreamOperator<T>;
  reduce<R>(fn: ReduceFunction<T>, windowFunction: ProcessWindowFunction<T, R, K, W>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  /** Folds each window's records into an accumulator (kept as they arrive); emits its result, or hands it to `windowFunction`. */
  aggregate<ACC, V>(fn: AggregateFunction<T, ACC, V>, options?: ProcessingOptions): SingleOutputStreamOperator<V>;
  aggregate<ACC, V, R>(
    fn: AggregateFunction<T, ACC, V>,
    windowFunction: ProcessWindowFunction<V, R, K, W>,
    options?: ProcessingOptions,
  ): SingleOutputStreamOperator<R>;
  /** Hands every record of a window to `fn` when it fires (the window keeps them all until then). */
  process<R>(fn: ProcessWindowFunction<T, R, K, W>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** Two streams, maybe of different types, into one function (Flink's ConnectedStreams). */
export interface ConnectedStreams<T1, T2> {
  /**
   * Keys both streams by the same kind of key: records of either stream with equal keys go to the
   * same subtask (the same key group) and share keyed state and timers there.
   */
  keyBy<K extends KeyLike>(keyOfFirst: (value: T1) => K, keyOfSecond: (value: T2) => K): KeyedConnectedStreams<T1, T2, K>;
  /** Without keys: each subtask gets some records of each stream; side outputs, no keyed state or timers. */
  process<R>(fn: CoProcessFunction<T1, T2, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** Two streams keyed by the same key (Flink's ConnectedStreams after keyBy). */
export interface KeyedConnectedStreams<T1, T2, K extends KeyLike> {
  /** Both streams' records of a key, with the key's shared state and timers (event and processing time). */
  process<R>(fn: KeyedCoProcessFunction<K, T1, T2, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** Flink's CoGroupFunction: both inputs' records of one key and window. */
export type CoGroupFunction<T1, T2, OUT> = (first: readonly T1[], second: readonly T2[], out: Collector<OUT>) => void;

/** Flink's JoinFunction: one pair of a window join. */
export type JoinFunction<T1, T2, OUT> = (first: T1, second: T2) => OUT;

/** `a.join(b)`: give the keys next (Flink's JoinedStreams). An inner join of the two streams' records per key and window. */
export interface JoinedStreams<T1, T2> {
  where<K extends KeyLike>(
    keyOfFirst: (value: T1) => K,
  ): { equalTo(keyOfSecond: (value: T2) => K): { window<W extends Window>(assigner: WindowAssigner<unknown, W>): JoinedWindow<T1, T2, K, W> } };
}

/** `a.coGroup(b)`: give the keys next (Flink's CoGroupedStreams). */
export interface CoGroupedStreams<T1, T2> {
  where<K extends KeyLike>(
    keyOfFirst: (value: T1) => K,
  ): { equalTo(keyOfSecond: (value: T2) => K): { window<W extends Window>(assigner: WindowAssigner<unknown, W>): CoGroupedWindow<T1, T2, K, W> } };
}

/** The window of a join or coGroup, ready for `apply` (Flink's WithWindow). */
interface WithWindow<Self> {
  trigger(trigger: Trigger<unknown, Window>): Self;
  allowedLateness(lateness: number | string): Self;
}

/** A join with its window: `apply((first, second) => joined)`, called for every pair of a key and window. */
export interface JoinedWindow<T1, T2, K extends KeyLike, W extends Window> extends WithWindow<JoinedWindow<T1, T2, K, W>> {
  apply<R>(fn: JoinFunction<T1, T2, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** A coGroup with its window: `apply((firsts, seconds, out) => ...)`. */
export interface CoGroupedWindow<T1, T2, K extends KeyLike, W extends Window> extends WithWindow<CoGroupedWindow<T1, T2, K, W>> {
  apply<R>(fn: CoGroupFunction<T1, T2, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}

/** `left.intervalJoin(right)`: give the bounds next (Flink's KeyedStream.IntervalJoin). */
export interface IntervalJoin<T1, T2, K extends KeyLike> {
  /**
   * A right record joins a left one when `left.ts + lower <= right.ts <= left.ts + upper`.
   * Milliseconds or text, negative allowed: `between('-5s', '5s')`.
   */
  between(lower: number | string, upper: number | string): IntervalJoined<T1, T2, K>;
}

/** An interval join with its bounds (Flink's IntervalJoined). */
export interface IntervalJoined<T1, T2, K extends KeyLike> {
  lowerBoundExclusive(): IntervalJoined<T1, T2, K>;
  upperBoundExclusive(): IntervalJoined<T1, T2, K>;
  /** Left records behind the watermark go here instead of being dropped (counted in numLateRecordsDropped). */
  sideOutputLeftLateData(tag: OutputTag<T1>): IntervalJoined<T1, T2, K>;
  sideOutputRightLateData(tag: OutputTag<T2>): IntervalJoined<T1, T2, K>;
  /** Calls `fn` for every pair; what it emits carries the later of the pair's timestamps. */
  process<R>(fn: ProcessJoinFunction<T1, T2, R>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
}
