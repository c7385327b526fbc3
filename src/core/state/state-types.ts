/**
 * The state a user function reads and writes, with Flink's names. Keyed state is scoped to the
 * current key: the same object acts on whichever key the runtime has set for the record or timer
 * being processed. Values must be structured-cloneable (they are written with `node:v8` serialize
 * in snapshots).
 */

/** One value per key. */
export interface ValueState<T> {
  /** The value for the current key, or the descriptor's default (undefined if none) when unset. */
  value(): T | undefined;
  /** Sets the value for the current key; `undefined` clears it. */
  update(value: T): void;
  clear(): void;
}

/** A list per key (and the list of operator state). */
export interface ListState<T> {
  /**
   * The list for the current key (an empty array when unset). The array is the stored one, not a
   * copy: do not modify it, use `add`, `addAll` or `update`.
   */
  get(): T[];
  add(value: T): void;
  addAll(values: T[]): void;
  /** Replaces the list (copying `values`); an empty array clears it. */
  update(values: T[]): void;
  clear(): void;
}

/** A map per key. Map keys are compared as JavaScript Map keys, so use primitives. */
export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  has(key: K): boolean;
  remove(key: K): void;
  entries(): IterableIterator<[K, V]>;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  isEmpty(): boolean;
  clear(): void;
}

/** A value per key that `add` folds new values into with the descriptor's reduce function. */
export interface ReducingState<T> {
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

/** An accumulator per key that `add` folds values into; `get` gives the accumulator's result. */
export interface AggregatingState<IN, OUT> {
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}

/** The kinds of keyed state, as stored in descriptors and snapshots. */
export type StateKind = 'value' | 'list' | 'map' | 'reducing' | 'aggregating';
