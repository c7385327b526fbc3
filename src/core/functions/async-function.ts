import type { RuntimeContext } from './process-functions.ts';

/** What one call of an async function gets besides its record. */
export interface AsyncInvokeContext {
  /**
   * Aborted when the record's timeout passes or the task stops: hand it to `fetch`, a database
   * driver or `setTimeout` from `node:timers/promises`, so work nobody waits for stops.
   */
  readonly signal: AbortSignal;
  /** 1 on the first attempt, then one more per retry. */
  readonly attempt: number;
}

/**
 * Flink's AsyncFunction: asks an outside system about one record and resolves to what the record
 * becomes: zero, one or many results (Flink's ResultFuture.complete). Given as the function
 * itself, or as an object with `open` and `close` (a client per subtask) and `timeout` (what a
 * record whose timeout passed becomes; without it, a timed-out record goes to the operator's
 * error policy, and under the default 'fail' the task fails, as in Flink).
 */
export type AsyncFunction<IN, OUT> = AsyncInvoke<IN, OUT> | RichAsyncFunction<IN, OUT>;

export type AsyncInvoke<IN, OUT> = (input: IN, context: AsyncInvokeContext) => Promise<readonly OUT[]>;

export interface RichAsyncFunction<IN, OUT> {
  open?(context: Omit<RuntimeContext, 'getState'>): void | Promise<void>;
  asyncInvoke: AsyncInvoke<IN, OUT>;
  /** The record's timeout passed before an attempt resolved (retries included): what it becomes. */
  timeout?(input: IN): readonly OUT[] | Promise<readonly OUT[]>;
  close?(): void | Promise<void>;
}

/**
 * When and how often a record's call is tried again (Flink's AsyncRetryStrategy): up to
 * `maxAttempts` calls in all, while the record's timeout has not passed, waiting `delay` between
 * them (fixed, or growing from `initial` by `multiplier` up to `max`). Retried are the calls that
 * reject where `ifError` holds (every error when not given) and, with `ifResult`, the ones whose
 * results it accepts as worth another try. A record whose attempts ran out rejects with its last
 * error (its error policy decides), or keeps its last results.
 */
export interface AsyncRetryStrategy<OUT> {
  maxAttempts: number;
  delay: number | string | { initial: number | string; max: number | string; multiplier?: number };
  ifError?: (error: unknown) => boolean;
  ifResult?: (results: readonly OUT[]) => boolean;
}
