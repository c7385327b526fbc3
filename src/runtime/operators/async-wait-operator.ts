import type { AsyncFunction, AsyncInvoke, RichAsyncFunction } from '../../core/functions/async-function.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { ListState } from '../../core/state/state-types.ts';
import { type AsyncTimerService, realAsyncTimers } from './async-timer-service.ts';
import { runtimeContext } from './keyed-process-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';
import { type AsyncEntry, OrderedStreamElementQueue, type StreamElementQueue, UnorderedStreamElementQueue } from './stream-element-queue.ts';

/** A retry strategy as the operator runs it (checked and parsed by the API). */
export interface AsyncRetry {
  maxAttempts: number;
  /** The wait before attempt `attempt + 1`, after `attempt` failed. */
  delayMs(attempt: number): number;
  ifError: ((error: unknown) => boolean) | undefined;
  ifResult: ((results: readonly unknown[]) => boolean) | undefined;
}

export interface AsyncWaitSettings {
  /** Emit in the input's order (orderedWait), or as results come within watermarks (unorderedWait). */
  ordered: boolean;
  /** Per record, all attempts included. */
  timeoutMs: number;
  /** Records in flight at most; input waits (back pressure) while it is full. */
  capacity: number;
  retry: AsyncRetry | undefined;
  onError: RecordErrorPolicy;
}

/** A record in flight as a checkpoint keeps it (format version 1). */
interface InFlightRecord {
  v: 1;
  record: unknown;
  timestamp: number;
}

/** The state name of the records in flight (operator list state: spread over the subtasks on rescaling). */
const IN_FLIGHT_STATE = 'async-wait-in-flight';

/** The timeout passed before the record's call resolved, and the function has no `timeout` of its own. */
class AsyncTimeoutError extends Error {
  constructor(timeoutMs: number, attempts: number) {
    super(`the async call did not resolve within its timeout of ${timeoutMs} ms (${attempts} attempt${attempts === 1 ? '' : 's'})`);
    this.name = 'AsyncTimeoutError';
  }
}

/**
 * Flink's AsyncWaitOperator: calls the async function for each record, up to `capacity` at once,
 * and emits the results as they come back, in the input's order (ordered) or as they complete but
 * never across a watermark (unordered); watermarks leave in their place among the records. Each
 * record has a timeout over all its attempts and may be retried with a back-off. Records in flight
 * are the operator's checkpointed state: a checkpoint keeps them (the barrier goes on at once,
 * their results follow it) and a restore calls the function for them again, so the job stays
 * exactly-once. Results reach the task's loop through its mailbox, one mail per burst. Timeouts and
 * retry delays run on an {@link AsyncTimerService}: real timers, or the test driver's clock.
 */
export class AsyncWaitOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  override readonly holdsWatermarks = true;
  readonly #invoke: AsyncInvoke<IN, OUT>;
  readonly #function: RichAsyncFunction<IN, OUT> | undefined;
  readonly #settings: AsyncWaitSettings;
  readonly #queue: StreamElementQueue;
  readonly #errors: RecordErrorHandler;
  #context!: OperatorContext;
  #state!: ListState<InFlightRecord>;
  #retries: MetricCounter | undefined;
  #timeouts: MetricCounter | undefined;
  /** Resolves the wait of a call that needs a completion (capacity full, end of input). */
  #waiter: (() => void) | undefined;
  #mailPending = false;
  /** Completions so far: a wait starts only if none came since the queue was last drained. */
  #completions = 0;
  #closed = false;
  #timers: AsyncTimerService = realAsyncTimers;
  /** The timers' callbacks, made once (not per record). */
  readonly #onTimeout = (entry: AsyncEntry): void => this.#timedOut(entry);
  readonly #onRetry = (entry: AsyncEntry): void => this.#call(entry);

  constructor(fn: AsyncFunction<IN, OUT>, settings: AsyncWaitSettings) {
    super();
    this.#function = typeof fn === 'function' ? undefined : fn;
    const invoke = typeof fn === 'function' ? fn : fn.asyncInvoke.bind(fn);
    this.#invoke = invoke;
    this.#settings = settings;
    this.#queue = settings.ordered ? new OrderedStreamElementQueue() : new UnorderedStreamElementQueue();
    this.#errors = new RecordErrorHandler(settings.onError);
  }

  /** Records held: called for and not yet emitted. */
  get inFlight(): number {
    return this.#queue.size;
  }

  /** Records whose call (or timeout function) has not answered yet: not done, and not waiting for a retry's delay. */
  get awaitingAnswers(): number {
    let awaiting = 0;
    for (const entry of this.#queue.entries()) if (!entry.done && entry.retryTimer === undefined) awaiting++;
    return awaiting;
  }

  /** Each record's timeout, every attempt included. */
  get timeoutMs(): number {
    return this.#settings.timeoutMs;
  }

  /** Runs the timeouts and retry delays on `timers` instead of real ones (the test driver's clock); before {@link open}. */
  useTimers(timers: AsyncTimerService): void {
    this.#timers = timers;
  }

  override async open(context: OperatorContext): Promise<void> {
    this.#context = context;
    this.#errors.open(context);
    this.#retries = context.metrics.counter('asyncRetries');
    this.#timeouts = context.metrics.counter('asyncTimeouts');
    context.metrics.gauge('asyncInFlight', () => this.#queue.size);
    this.#state = context.operatorState.getListState<InFlightRecord>(IN_FLIGHT_STATE);
    await this.#function?.open?.(runtimeContext(context));
    // Records a checkpoint caught in flight are called for again (their results follow the barrier they were in flight at).
    const restored = this.#state.get();
    for (const held of restored) this.#start(held.record as IN, held.timestamp);
    this.#state.clear();
  }

  override async processBatch(batch: IN[], timestamps?: readonly number[]): Promise<OUT[]> {
    const { capacity } = this.#settings;
    for (let i = 0; i < batch.length; i++) {
      while (this.#queue.size >= capacity) await this.#drainOrWait();
      this.#start(batch[i] as IN, timestamps === undefined ? Number.NaN : (timestamps[i] as number));
    }
    return [];
  }

  override async processWatermark(watermark: number): Promise<OUT[]> {
    this.#queue.addWatermark(watermark);
    // The end of event time comes only at the end of input or from a drained stop, whose savepoint
    // follows it: every record in flight gets its results (or its timeout) and they go out before
    // it (Flink's AsyncWaitOperator finishes its queue at the end of input). Left in flight, they
    // would be in the last savepoint's state, behind source offsets already past them: lost to a
    // job that is not resumed.
    if (watermark === Number.POSITIVE_INFINITY) {
      while (this.#queue.size > 0) await this.#drainOrWait();
    }
    await this.#drain();
    return [];
  }

  override snapshotState(_checkpointId: number): void {
    this.#state.update(this.#queue.entries().map((entry) => ({ v: 1, record: entry.record, timestamp: entry.timestamp })));
  }

  /** The end of input: every record's results (and the watermarks between them) go out before the operators after it end. */
  override async endInput(): Promise<OUT[]> {
    while (this.#queue.size > 0) await this.#drainOrWait();
    return [];
  }

  override async close(): Promise<void> {
    this.#closed = true;
    for (const entry of this.#queue.entries()) {
      this.#timers.cancel(entry.timeoutTimer);
      this.#timers.cancel(entry.retryTimer);
      entry.controller.abort(new Error('the task stopped'));
    }
    await this.#function?.close?.();
  }

  #start(record: IN, timestamp: number): void {
    const entry: AsyncEntry = {
      record,
      timestamp,
      attempt: 0,
      done: false,
      results: undefined,
      failed: false,
      error: undefined,
      controller: new AbortController(),
      timeoutTimer: undefined,
      retryTimer: undefined,
      slot: undefined,
    };
    this.#queue.add(entry);
    entry.timeoutTimer = this.#timers.schedule(this.#settings.timeoutMs, this.#onTimeout, entry);
    this.#call(entry);
  }

  #call(entry: AsyncEntry): void {
    entry.retryTimer = undefined;
    const attempt = ++entry.attempt;
    let pending: Promise<readonly OUT[]>;
    try {
      pending = this.#invoke(entry.record as IN, { signal: entry.controller.signal, attempt });
    } catch (error) {
      this.#attemptFailed(entry, attempt, error);
      return;
    }
    if (typeof (pending as { then?: unknown } | undefined)?.then !== 'function') {
      this.#attemptFailed(entry, attempt, new TypeError('the async function must return a promise (of an array of results)'));
      return;
    }
    pending.then(
      (results) => this.#attemptResolved(entry, attempt, results),
      (error: unknown) => this.#attemptFailed(entry, attempt, error),
    );
  }

  #attemptResolved(entry: AsyncEntry, attempt: number, results: readonly OUT[]): void {
    if (entry.done || attempt !== entry.attempt) return; // timed out meanwhile
    if (!Array.isArray(results)) {
      this.#attemptFailed(
        entry,
        attempt,
        new TypeError(`the async function must resolve to an array of results ([] for none, [value] for one), not ${typeof results}`),
      );
      return;
    }
    const retry = this.#settings.retry;
    if (retry?.ifResult?.(results) === true && this.#retried(entry, retry)) return;
    this.#complete(entry, results, false, undefined);
  }

  #attemptFailed(entry: AsyncEntry, attempt: number, error: unknown): void {
    if (entry.done || attempt !== entry.attempt) return;
    const retry = this.#settings.retry;
    if (retry !== undefined && (retry.ifError?.(error) ?? true) && this.#retried(entry, retry)) return;
    this.#complete(entry, undefined, true, error);
  }

  /** Schedules the next attempt, if the strategy and the record's timeout leave room for one. */
  #retried(entry: AsyncEntry, retry: AsyncRetry): boolean {
    if (entry.attempt >= retry.maxAttempts || this.#closed) return false;
    this.#retries?.inc();
    entry.retryTimer = this.#timers.schedule(retry.delayMs(entry.attempt), this.#onRetry, entry);
    return true;
  }

  #timedOut(entry: AsyncEntry): void {
    if (entry.done) return;
    entry.timeoutTimer = undefined;
    this.#timers.cancel(entry.retryTimer);
    entry.retryTimer = undefined;
    const attempts = entry.attempt;
    entry.attempt++; // whatever the attempt in flight resolves to now is ignored
    this.#timeouts?.inc();
    entry.controller.abort(new AsyncTimeoutError(this.#settings.timeoutMs, attempts));
    const handler = this.#function?.timeout;
    if (handler === undefined) {
      this.#complete(entry, undefined, true, new AsyncTimeoutError(this.#settings.timeoutMs, attempts));
      return;
    }
    Promise.resolve()
      .then(() => handler.call(this.#function, entry.record as IN))
      .then(
        (results) => {
          if (Array.isArray(results)) this.#complete(entry, results, false, undefined);
          else this.#complete(entry, undefined, true, new TypeError('the timeout function must give an array of results ([] for none)'));
        },
        (error: unknown) => this.#complete(entry, undefined, true, error),
      );
  }

  #complete(entry: AsyncEntry, results: readonly unknown[] | undefined, failed: boolean, error: unknown): void {
    if (entry.done) return;
    entry.done = true;
    entry.results = results;
    entry.failed = failed;
    entry.error = error;
    this.#timers.cancel(entry.timeoutTimer);
    this.#timers.cancel(entry.retryTimer);
    this.#queue.completed(entry);
    this.#completions++;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter();
    } else if (!this.#mailPending && !this.#closed) {
      this.#mailPending = true;
      this.#context.executeMail(async () => {
        this.#mailPending = false;
        await this.#drain();
      });
    }
  }

  /** Emits what is ready; when nothing was, and nothing completed meanwhile, waits for the next completion. */
  async #drainOrWait(): Promise<void> {
    const completions = this.#completions;
    if ((await this.#drain()) > 0 || completions !== this.#completions) return;
    await new Promise<void>((resolve) => {
      this.#waiter = resolve;
    });
  }

  /** Emits what the queue lets out now, watermarks in their place; returns how many records left. */
  async #drain(): Promise<number> {
    const queue = this.#queue;
    let records: unknown[] = [];
    let timestamps: number[] = [];
    let stamped = false;
    let polled = 0;
    for (let next = queue.poll(); next !== undefined; next = queue.poll()) {
      if (typeof next === 'number') {
        await this.#context.emit(records, stamped ? timestamps : undefined);
        records = [];
        timestamps = [];
        stamped = false;
        await this.#context.emitWatermark(next);
        continue;
      }
      polled++;
      if (next.failed) {
        this.#errors.onError(next.error, next.record, Number.isNaN(next.timestamp) ? undefined : next.timestamp);
        continue;
      }
      const results = next.results as readonly unknown[];
      if (!Number.isNaN(next.timestamp)) stamped = true;
      for (let i = 0; i < results.length; i++) {
        records.push(results[i]);
        timestamps.push(next.timestamp);
      }
    }
    if (polled > 0) await this.#context.emit(records, stamped ? timestamps : undefined);
    return polled;
  }
}
