import type { MapStateDescriptor, StateDescriptor } from '../state/state-descriptors.ts';
import type { KeyLike } from '../state/state-key.ts';
import type { OutputTag } from './output-tag.ts';
import type { Collector, KeyedContext, OnTimerContext, ProcessContext, RuntimeContext } from './process-functions.ts';

/**
 * The broadcast state pattern (Flink's BroadcastProcessFunction and KeyedBroadcastProcessFunction):
 * a low-volume stream (rules, configuration, a lookup table) broadcast to every subtask of an
 * operator with `stream.broadcast(descriptor)`, connected to the main stream, and kept in broadcast
 * state: a map per descriptor, the same in every subtask, written only on the broadcast side (so
 * every subtask makes the same changes) and read on the main side.
 */

/** Broadcast state as the main side sees it: read only. */
export interface ReadOnlyBroadcastState<K, V> {
  get(key: K): V | undefined;
  has(key: K): boolean;
  entries(): IterableIterator<[K, V]>;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  readonly size: number;
}

/** Broadcast state as the broadcast side sees it. Every subtask must make the same changes: write it from the broadcast record alone. */
export interface BroadcastState<K, V> extends ReadOnlyBroadcastState<K, V> {
  put(key: K, value: V): void;
  remove(key: K): void;
  clear(): void;
}

/** What the main side's function sees besides the record: read-only broadcast state. */
export interface ReadOnlyBroadcastAccess {
  getBroadcastState<K, V>(descriptor: MapStateDescriptor<K, V>): ReadOnlyBroadcastState<K, V>;
}

/** What the broadcast side's function sees of a broadcast record (Flink's BroadcastProcessFunction.Context). */
export interface BroadcastContext {
  /** The record's event time, or undefined when it has none. */
  timestamp(): number | undefined;
  currentProcessingTime(): number;
  currentWatermark(): number;
  output<X>(tag: OutputTag<X>, value: X): void;
  getBroadcastState<K, V>(descriptor: MapStateDescriptor<K, V>): BroadcastState<K, V>;
}

/** The keyed operator's broadcast side: it may also act on every key's state (Flink's applyToKeyedState). */
export interface KeyedBroadcastContext<K extends KeyLike> extends BroadcastContext {
  /** Calls `fn` with each key that has a value in `descriptor`'s state, and the state, scoped to that key. */
  applyToKeyedState<S>(descriptor: StateDescriptor<S>, fn: (key: K, state: S) => void): void;
}

/** Flink's BroadcastProcessFunction: a stream that is not keyed, connected to a broadcast stream. */
export interface BroadcastProcessFunction<IN, B, OUT> {
  open?(context: Omit<RuntimeContext, 'getState'>): void;
  processElement(value: IN, context: ProcessContext & ReadOnlyBroadcastAccess, out: Collector<OUT>): void;
  processBroadcastElement(value: B, context: BroadcastContext, out: Collector<OUT>): void;
  close?(): void;
}

/** Flink's KeyedBroadcastProcessFunction: a keyed stream, with its keyed state and timers, connected to a broadcast stream. */
export interface KeyedBroadcastProcessFunction<K extends KeyLike, IN, B, OUT> {
  open?(context: RuntimeContext): void;
  processElement(value: IN, context: KeyedContext<K> & ReadOnlyBroadcastAccess, out: Collector<OUT>): void;
  processBroadcastElement(value: B, context: KeyedBroadcastContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, context: OnTimerContext<K> & ReadOnlyBroadcastAccess, out: Collector<OUT>): void;
  close?(): void;
}
