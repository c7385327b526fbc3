import { WeirError } from '../core/errors/weir-error.ts';
import type { AsyncFunction, AsyncRetryStrategy } from '../core/functions/async-function.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import { parseDuration } from '../core/time/duration.ts';
import { type AsyncRetry, AsyncWaitOperator, type AsyncWaitSettings } from '../runtime/operators/async-wait-operator.ts';
import type { DataStream, SingleOutputStreamOperator } from './data-stream.ts';
import type { DataStreamImpl } from './data-stream-impl.ts';
import { addOperator, addOperatorDeadLetters, errorPolicyOf, type ProcessingOptions } from './stream-transformations.ts';

/** The settings of an async I/O operator: an operator's, its error policy, and Flink's timeout, capacity and retry strategy. */
export interface AsyncWaitOptions<OUT> extends ProcessingOptions {
  /** How long a record may take, every attempt included (milliseconds or text: `'2s'`). Then the function's `timeout` decides, or the error policy. */
  timeout: number | string;
  /** Records in flight per subtask at most (default 100, as Flink's); while it is full the operator takes no input: back pressure. */
  capacity?: number;
  /** Calls tried again on errors (or on results `ifResult` accepts), with a fixed or growing delay, within the timeout. */
  retry?: AsyncRetryStrategy<NoInfer<OUT>>;
}

const DEFAULT_CAPACITY = 100;
const MAX_CAPACITY = 1_000_000;

/**
 * Async I/O (Flink's AsyncDataStream): enriches each record from an outside system (a database,
 * an HTTP service, a cache) without waiting for one answer before asking the next, and stays
 * exactly-once: the records in flight are part of every checkpoint and are asked about again after
 * a restore.
 *
 * ```ts
 * const enriched = AsyncDataStream.orderedWait(
 *   orders,
 *   async (order, { signal }) => {
 *     const response = await fetch(`http://customers/${order.customer}`, { signal });
 *     return [{ ...order, customer: await response.json() }];
 *   },
 *   { timeout: '2s', capacity: 200, retry: { maxAttempts: 3, delay: { initial: '50ms', max: '1s' } } },
 * );
 * ```
 */
export const AsyncDataStream = {
  /** Results leave in the order their records came (Flink's orderedWait). */
  orderedWait<IN, OUT>(stream: DataStream<IN>, fn: AsyncFunction<IN, OUT>, options: AsyncWaitOptions<OUT>): SingleOutputStreamOperator<OUT> {
    return addAsyncWait(stream, fn, options, true);
  },
  /**
   * Results leave as they come back (Flink's unorderedWait), lower latency under varied answer
   * times; watermarks still keep order: no result crosses one, so event time stays correct.
   */
  unorderedWait<IN, OUT>(stream: DataStream<IN>, fn: AsyncFunction<IN, OUT>, options: AsyncWaitOptions<OUT>): SingleOutputStreamOperator<OUT> {
    return addAsyncWait(stream, fn, options, false);
  },
};

function addAsyncWait<IN, OUT>(
  stream: DataStream<IN>,
  fn: AsyncFunction<IN, OUT>,
  options: AsyncWaitOptions<OUT>,
  ordered: boolean,
): SingleOutputStreamOperator<OUT> {
  const kind = ordered ? 'orderedWait' : 'unorderedWait';
  const name = options.name ?? kind;
  if (typeof fn !== 'function' && typeof (fn as { asyncInvoke?: unknown } | undefined)?.asyncInvoke !== 'function') {
    throw new WeirError('INVALID_CONFIG', `operator "${name}": the async function must be a function or an object with asyncInvoke(input, context)`, {
      hint: 'pass async (record, { signal }) => [result]',
    });
  }
  const settings = asyncWaitSettings(options, name, ordered);
  const impl = stream as DataStreamImpl<IN>;
  const output = addOperator(impl.graph, [impl.upstream], {
    kind,
    createOperator: () => new AsyncWaitOperator<IN, OUT>(fn, settings) as StreamOperator<unknown, unknown>,
    options: { ...options, name },
    keySelector: impl.upstream.keySelector,
  });
  addOperatorDeadLetters(impl.graph, output, options);
  return impl.factory.operatorOutput<OUT>(output);
}

/** The options checked: each bad value gets one error naming the setting. */
export function asyncWaitSettings<OUT>(options: AsyncWaitOptions<OUT>, name: string, ordered: boolean): AsyncWaitSettings {
  const setting = (field: string) => `operator "${name}" ${field}`;
  if (options.timeout === undefined) {
    throw new WeirError('INVALID_CONFIG', `${setting('timeout')}: an async operator needs a timeout`, {
      hint: "give one: { timeout: '5s' } (every attempt of a record included)",
    });
  }
  const timeoutMs = parseDuration(options.timeout, setting('timeout'));
  if (timeoutMs <= 0) throw new WeirError('INVALID_CONFIG', `${setting('timeout')}: must be more than 0`, { hint: "for example { timeout: '5s' }" });
  const capacity = options.capacity ?? DEFAULT_CAPACITY;
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_CAPACITY) {
    throw new WeirError('INVALID_CONFIG', `${setting('capacity')}: must be a whole number from 1 to ${MAX_CAPACITY}, not ${JSON.stringify(capacity)}`, {
      hint: `the records in flight per subtask; Flink's default is ${DEFAULT_CAPACITY}`,
    });
  }
  return {
    ordered,
    timeoutMs,
    capacity,
    retry: options.retry === undefined ? undefined : asyncRetry(options.retry as AsyncRetryStrategy<unknown>, setting),
    onError: errorPolicyOf(options, ordered ? 'orderedWait' : 'unorderedWait'),
  };
}

function asyncRetry(strategy: AsyncRetryStrategy<unknown>, setting: (field: string) => string): AsyncRetry {
  const { maxAttempts, delay } = strategy;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new WeirError('INVALID_CONFIG', `${setting('retry.maxAttempts')}: must be a whole number of at least 1, not ${JSON.stringify(maxAttempts)}`, {
      hint: 'the calls per record in all, the first one included: { maxAttempts: 3, delay: 100 }',
    });
  }
  for (const field of ['ifError', 'ifResult'] as const) {
    if (strategy[field] !== undefined && typeof strategy[field] !== 'function') {
      throw new WeirError('INVALID_CONFIG', `${setting(`retry.${field}`)}: must be a function`, { hint: `${field}: (x) => boolean` });
    }
  }
  let delayMs: (attempt: number) => number;
  if (typeof delay === 'object' && delay !== null) {
    const initial = parseDuration(delay.initial, setting('retry.delay.initial'));
    const max = parseDuration(delay.max, setting('retry.delay.max'));
    const multiplier = delay.multiplier ?? 2;
    if (!(multiplier >= 1) || max < initial) {
      throw new WeirError('INVALID_CONFIG', `${setting('retry.delay')}: needs multiplier >= 1 and max >= initial`, {
        hint: "for example { initial: '50ms', max: '2s', multiplier: 2 }",
      });
    }
    delayMs = (attempt) => Math.min(max, initial * multiplier ** (attempt - 1));
  } else {
    const fixed = parseDuration(delay, setting('retry.delay'));
    delayMs = () => fixed;
  }
  return { maxAttempts, delayMs, ifError: strategy.ifError, ifResult: strategy.ifResult };
}
