import { WeirError } from '../../core/errors/weir-error.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { Collector, KeyedProcessFunction, OnTimerContext, RuntimeContext, TimerService } from '../../core/functions/process-functions.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import type { StateDescriptor } from '../../core/state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../../core/state/state-key.ts';
import type { TimeDomain } from '../../core/time/time-domain.ts';
import { decodeKey } from '../../state/composite-key.ts';
import { validateStateKey } from '../../state/key-group-range-assignment.ts';
import { keyText, RecordErrorHandler } from './record-error-handler.ts';
import { TimestampedCollector } from './timestamped-collector.ts';
import { userMetricGroup } from './user-metric-group.ts';

/** The backend of a keyed operator, or a clear error when it runs on a stream that is not keyed. */
export function requireKeyedState(context: OperatorContext, call: string): KeyedStateBackend {
  if (context.keyedState === undefined) {
    throw new WeirError('NOT_KEYED', `operator "${context.operatorName}" needs a keyed stream`, { hint: `call keyBy(...) before ${call}`, fault: 'user' });
  }
  return context.keyedState;
}

/** The runtime context a function of a stream that is not keyed opens with: where it runs, and its metrics. */
export function runtimeContext(context: OperatorContext): Omit<RuntimeContext, 'getState'> {
  return {
    subtaskIndex: context.subtaskIndex,
    parallelism: context.parallelism,
    attemptNumber: context.attemptNumber,
    metrics: userMetricGroup(context.metrics, context.subtaskIndex, context.operatorName),
  };
}

/** The runtime context a keyed function opens with: that, and keyed state. */
export function keyedRuntimeContext(context: OperatorContext, backend: KeyedStateBackend): RuntimeContext {
  return { ...runtimeContext(context), getState: <S>(descriptor: StateDescriptor<S>) => backend.getState(descriptor) as S };
}

/** A function with timers: keyed process functions and keyed co-process functions. */
export interface TimerFunction<K extends KeyLike> {
  onTimer?(timestamp: number, context: OnTimerContext<K>, out: Collector<never>): void;
}

/**
 * The record and timer context of keyed process functions (Flink's KeyedProcessOperator's
 * ContextImpl and OnTimerContextImpl in one object, reused for every record): the current key,
 * the record's timestamp, the timer service on the keyed backend, side outputs.
 */
export class KeyedProcessContext<K extends KeyLike> implements OnTimerContext<K> {
  readonly timerService: TimerService;
  readonly collector = new TimestampedCollector<unknown>();
  /** The current record's (or event-time timer's) timestamp; undefined: none. */
  currentTimestamp: number | undefined = undefined;
  currentWatermark = Number.NEGATIVE_INFINITY;
  domain: TimeDomain = 'event';
  #backend!: KeyedStateBackend;
  #context!: OperatorContext;
  #errors!: RecordErrorHandler;

  constructor() {
    this.timerService = {
      currentProcessingTime: () => this.#context.currentProcessingTime(),
      currentWatermark: () => this.currentWatermark,
      registerProcessingTimeTimer: (timestamp) => {
        this.#backend.registerTimer('processing', timestamp);
        this.#context.requestProcessingTimeCallback(timestamp);
      },
      deleteProcessingTimeTimer: (timestamp) => {
        this.#backend.deleteTimer('processing', timestamp);
      },
      registerEventTimeTimer: (timestamp) => {
        this.#backend.registerTimer('event', timestamp);
      },
      deleteEventTimeTimer: (timestamp) => {
        this.#backend.deleteTimer('event', timestamp);
      },
    };
  }

  /** `errors`: the operator's policy, for a timer whose onTimer throws. */
  open(context: OperatorContext, backend: KeyedStateBackend, errors: RecordErrorHandler): void {
    this.#context = context;
    this.#backend = backend;
    this.#errors = errors;
    const next = backend.nextTimerTimestamp('processing');
    if (next !== undefined) context.requestProcessingTimeCallback(next);
  }

  getCurrentKey(): K {
    return decodeKey(this.#backend.getCurrentKey() as StateKey) as K;
  }

  timestamp(): number | undefined {
    return this.currentTimestamp;
  }

  timeDomain(): TimeDomain {
    return this.domain;
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.#context.output(tag.id, value, this.currentTimestamp ?? Number.NaN);
  }

  /** Sets the current record's timestamp (for its output and side outputs); NaN or undefined: none. */
  setTimestamp(timestamp: number | undefined): void {
    const none = timestamp === undefined || Number.isNaN(timestamp);
    this.currentTimestamp = none ? undefined : timestamp;
    this.collector.timestamp = none ? Number.NaN : timestamp;
  }

  /** Event time reached `watermark`: fires the due event-time timers; returns the collector with what they emitted (timestamped). */
  advanceWatermark(watermark: number, fn: TimerFunction<K>): TimestampedCollector<unknown> {
    this.currentWatermark = watermark;
    this.collector.reset(true);
    this.fireTimers('event', watermark, fn);
    return this.collector;
  }

  /** Processing time reached `now`: fires the due processing-time timers; returns the collector with what they emitted. */
  fireProcessingTimers(now: number, fn: TimerFunction<K>): TimestampedCollector<unknown> {
    this.collector.reset(false);
    this.fireTimers('processing', now, fn);
    return this.collector;
  }

  /**
   * Fires the timers of `domain` due at `time` through the function's `onTimer` (output goes to the
   * collector). An onTimer that throws goes to the operator's error policy: under 'skip' or a
   * dead-letter topic what it emitted is dropped and the next timer fires.
   */
  fireTimers(domain: TimeDomain, time: number, fn: TimerFunction<K>): void {
    this.domain = domain;
    const onTimer = fn.onTimer;
    if (onTimer === undefined) {
      this.#backend.pollTimersUpTo(domain, time, () => {});
    } else {
      this.#backend.pollTimersUpTo(domain, time, (key, timestamp) => {
        // Event-time timer output carries the timer's time; processing-time timer output has no timestamp (as in Flink).
        this.setTimestamp(domain === 'event' ? timestamp : undefined);
        const mark = this.collector.records.length;
        try {
          onTimer.call(fn, timestamp, this, this.collector);
        } catch (error) {
          this.collector.truncate(mark);
          this.#errors.onCallError(
            error,
            `the ${domain}-time timer at ${timestamp} of key ${keyText(key)}`,
            { key: decodeKey(key), timer: timestamp, domain },
            domain === 'event' ? timestamp : undefined,
          );
        }
      });
    }
    if (domain === 'processing') {
      const next = this.#backend.nextTimerTimestamp('processing');
      if (next !== undefined) this.#context.requestProcessingTimeCallback(next);
    }
  }
}

/**
 * Runs `call` on each record of a keyed operator's batch: the record's key made the current key,
 * its timestamp the context's; what it emits goes to the context's collector, and a record the call
 * throws on emits nothing (state it changed stays changed) and goes to the error policy. Returns
 * the collector (records and timestamps).
 */
export function processKeyedBatch<K extends KeyLike, T>(
  batch: T[],
  timestamps: readonly number[] | undefined,
  keyed: { backend: KeyedStateBackend; select: KeySelector<T>; operatorName: string },
  context: KeyedProcessContext<K>,
  errors: RecordErrorHandler,
  call: (value: T) => void,
): TimestampedCollector<unknown> {
  const { backend, select, operatorName } = keyed;
  const collector = context.collector;
  collector.reset(timestamps !== undefined);
  context.setTimestamp(undefined);
  for (let i = 0; i < batch.length; i++) {
    const value = batch[i] as T;
    backend.setCurrentKey(validateStateKey(select(value), operatorName));
    if (timestamps !== undefined) context.setTimestamp(timestamps[i]);
    const mark = collector.records.length;
    try {
      call(value);
    } catch (error) {
      collector.truncate(mark);
      errors.onError(error, value, timestamps?.[i]);
    }
  }
  return collector;
}

/**
 * Runs a {@link KeyedProcessFunction}: sets the current key of the keyed state backend before each
 * record and each timer, so state handles and timers act on that key. Event-time timers fire as
 * the watermark passes them; what a record emits carries the record's timestamp, what an
 * event-time timer emits the timer's.
 */
export class KeyedProcessOperator<K extends KeyLike, IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: KeyedProcessFunction<K, IN, OUT>;
  readonly #keySelector: KeySelector<IN>;
  #backend!: KeyedStateBackend;
  #name = '';
  readonly #context = new KeyedProcessContext<K>();
  readonly #errors: RecordErrorHandler;

  constructor(fn: KeyedProcessFunction<K, IN, OUT>, keySelector: KeySelector<IN>, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#keySelector = keySelector;
    this.#errors = new RecordErrorHandler(onError);
  }

  override open(context: OperatorContext): void {
    this.#errors.open(context);
    this.#backend = requireKeyedState(context, 'process(...)');
    this.#name = context.operatorName;
    this.#fn.open?.(keyedRuntimeContext(context, this.#backend));
    this.#context.open(context, this.#backend, this.#errors);
  }

  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const context = this.#context;
    const keyed = { backend: this.#backend, select: this.#keySelector, operatorName: this.#name };
    const collector = processKeyedBatch(batch, timestamps, keyed, context, this.#errors, (value) =>
      fn.processElement(value, context, context.collector as TimestampedCollector<OUT>),
    );
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override processWatermark(watermark: number): OUT[] {
    const collector = this.#context.advanceWatermark(watermark, this.#fn as TimerFunction<K>);
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override onProcessingTime(now: number): OUT[] {
    return this.#context.fireProcessingTimers(now, this.#fn as TimerFunction<K>).records as OUT[];
  }

  override close(): void {
    this.#fn.close?.();
  }
}
