import type { OutputTag } from '../functions/output-tag.ts';
import type { Collector, RuntimeContext } from '../functions/process-functions.ts';
import type { KeyLike, StateKey } from '../state/state-key.ts';
import type { Window } from './window.ts';

/** What a window function sees besides the records (Flink's ProcessWindowFunction.Context). */
export interface ProcessWindowContext<W extends Window> {
  /** The window that fired: `window.start`, `window.end`, `window.maxTimestamp()`. */
  readonly window: W;
  currentProcessingTime(): number;
  currentWatermark(): number;
  /** Emits `value` on a side output, with the window's timestamp (its maxTimestamp). */
  output<X>(tag: OutputTag<X>, value: X): void;
}

/**
 * Called when a window fires (Flink's ProcessWindowFunction). With `process(...)` it gets every
 * record of the window; after `reduce(fn, windowFunction)` or `aggregate(fn, windowFunction)` it
 * gets the one reduced or aggregated value, so the window keeps only that. What it emits carries
 * the window's maxTimestamp.
 */
export interface ProcessWindowFunction<IN, OUT, K extends KeyLike, W extends Window> {
  open?(context: RuntimeContext): void;
  process(key: K, context: ProcessWindowContext<W>, elements: readonly IN[], out: Collector<OUT>): void;
  close?(): void;
}

/**
 * Folds a window's records into an accumulator (Flink's AggregateFunction): the window keeps one
 * accumulator per key and window instead of the records. `merge` is needed by session windows,
 * whose windows merge. Accumulators are checkpointed: keep them structured-cloneable.
 */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  merge?(a: ACC, b: ACC): ACC;
}

/** Combines two records (or results) of a window into one of the same type (Flink's ReduceFunction). */
export type ReduceFunction<T> = (a: T, b: T) => T;
