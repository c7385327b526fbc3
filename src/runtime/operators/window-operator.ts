import { WeirError } from '../../core/errors/weir-error.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { RuntimeContext } from '../../core/functions/process-functions.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import { mapState } from '../../core/state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../../core/state/state-key.ts';
import type { MapState } from '../../core/state/state-types.ts';
import { isFire, isPurge, type Trigger } from '../../core/windowing/trigger.ts';
import { type TimeWindow, type Window, windowNamespace, windowOfNamespace } from '../../core/windowing/window.ts';
import type { WindowAssigner, WindowAssignerContext } from '../../core/windowing/window-assigner.ts';
import type { ProcessWindowFunction } from '../../core/windowing/window-functions.ts';
import { decodeKey } from '../../state/composite-key.ts';
import { validateStateKey } from '../../state/key-group-range-assignment.ts';
import { keyedRuntimeContext, requireKeyedState } from './keyed-process-operator.ts';
import { keyText, RecordErrorHandler } from './record-error-handler.ts';
import { TimestampedCollector } from './timestamped-collector.ts';
import { WindowProcessContext, WindowTriggerContext } from './window-contexts.ts';

/**
 * How records fold into a window's state, and what the window function gets when it fires: a list
 * of the records (process), the running reduction (reduce), or an accumulator's result
 * (aggregate). `merge` combines two windows' states when session windows merge.
 */
export interface WindowContents<IN, ACC, R> {
  add(accumulator: ACC | undefined, value: IN): ACC;
  merge(a: ACC, b: ACC): ACC;
  result(accumulator: ACC): R[];
}

export interface WindowOperatorOptions<IN, ACC, R, OUT, K extends KeyLike, W extends Window> {
  assigner: WindowAssigner<IN, W>;
  trigger: Trigger<IN, W>;
  /** Milliseconds of event time a window's state is kept after its end, for late records (event time only). */
  allowedLateness: number;
  lateDataTag: OutputTag<IN> | undefined;
  keySelector: KeySelector<IN>;
  contents: WindowContents<IN, ACC, R>;
  /** Called with the window's results; undefined: the results are emitted as they are. */
  windowFunction: ProcessWindowFunction<R, OUT, K, W> | undefined;
  /** What a record whose reduce, aggregate or trigger throws, or a firing whose result or window function throws, does. */
  onError?: RecordErrorPolicy;
}

/** State names of the operator; trigger state is `window-trigger:<name>`. */
const CONTENTS = 'window-contents';
const WINDOW_SET = 'window-set';

/**
 * Windows on a keyed stream (Flink's WindowOperator). Per key, each window's contents live in keyed
 * map state under the window's namespace, and its timers (the trigger's and the cleanup timer at
 * the window's end plus the allowed lateness) are keyed timers namespaced by the window: all of it
 * is checkpointed and moves with its key group on rescaling.
 *
 * A record goes into the windows its assigner gives, except windows the watermark has passed by
 * more than the allowed lateness: a record with no window left is late, and goes to the late side
 * output, or is counted in the `numLateRecordsDropped` metric when there is none (never dropped
 * silently). Session windows merge as records arrive (their contents and trigger state merge too).
 * A fired window emits with the timestamp `window.maxTimestamp()`.
 */
export class WindowOperator<IN, ACC, R, OUT, K extends KeyLike, W extends Window> extends StreamOperator<IN, OUT> {
  readonly #options: WindowOperatorOptions<IN, ACC, R, OUT, K, W>;
  readonly #eventTime: boolean;
  #backend!: KeyedStateBackend;
  #context!: OperatorContext;
  #contents!: MapState<string, ACC>;
  #windowSet: MapState<string, 1> | undefined;
  #lateDropped!: MetricCounter;
  #watermark = Number.NEGATIVE_INFINITY;
  #now = 0;
  readonly #collector = new TimestampedCollector<OUT>();
  readonly #triggerContext: WindowTriggerContext;
  readonly #processContext: WindowProcessContext<W>;
  readonly #assignerContext: WindowAssignerContext = { currentProcessingTime: () => this.#now };
  readonly #errors: RecordErrorHandler;

  constructor(options: WindowOperatorOptions<IN, ACC, R, OUT, K, W>) {
    super();
    this.#options = options;
    this.#errors = new RecordErrorHandler(options.onError);
    this.#eventTime = options.assigner.isEventTime;
    this.#triggerContext = new WindowTriggerContext(this);
    this.#processContext = new WindowProcessContext<W>(this);
  }

  /** @internal for the contexts */
  get backend(): KeyedStateBackend {
    return this.#backend;
  }

  /** @internal */
  get operatorContext(): OperatorContext {
    return this.#context;
  }

  /** @internal */
  get watermark(): number {
    return this.#watermark;
  }

  override open(context: OperatorContext): void {
    this.#backend = requireKeyedState(context, 'window(...)');
    this.#context = context;
    this.#errors.open(context);
    this.#contents = this.#backend.getState(mapState<string, ACC>(CONTENTS));
    this.#windowSet = this.#options.assigner.isMerging ? this.#backend.getState(mapState<string, 1>(WINDOW_SET)) : undefined;
    this.#lateDropped = context.metrics.counter('numLateRecordsDropped');
    this.#options.windowFunction?.open?.(keyedRuntimeContext(context, this.#backend) as RuntimeContext);
    const next = this.#backend.nextTimerTimestamp('processing');
    if (next !== undefined) context.requestProcessingTimeCallback(next);
  }

  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const { assigner, keySelector } = this.#options;
    const backend = this.#backend;
    const name = this.#context.operatorName;
    const eventTime = this.#eventTime;
    if (eventTime && timestamps === undefined) throw this.#noTimestamps();
    this.#now = this.#context.currentProcessingTime();
    this.#collector.reset(true);
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as IN;
      backend.setCurrentKey(validateStateKey(keySelector(value), name));
      const timestamp = eventTime ? (timestamps?.[i] as number) : this.#now;
      if (Number.isNaN(timestamp)) throw this.#noTimestamps();
      const windows = assigner.assignWindows(value, timestamp, this.#assignerContext);
      let skipped: boolean;
      try {
        skipped = this.#windowSet === undefined ? this.#addToWindows(value, timestamp, windows) : this.#addToMergingWindows(value, timestamp, windows);
      } catch (error) {
        // Its reduce, aggregate or trigger threw: the windows it was added to before stay as they are.
        this.#errors.onError(error, value, eventTime ? timestamp : undefined);
        continue;
      }
      // A record no window takes any more is late: the side output has it, or the metric counts it.
      if (skipped && eventTime && timestamp + this.#options.allowedLateness <= this.#watermark) {
        const tag = this.#options.lateDataTag;
        if (tag === undefined || !this.#context.output(tag.id, value, timestamp)) this.#lateDropped.inc();
      }
    }
    this.outputTimestamps = this.#collector.timestamps;
    return this.#collector.records;
  }

  override processWatermark(watermark: number): OUT[] {
    this.#watermark = watermark;
    this.#collector.reset(true);
    this.#backend.pollTimersUpTo('event', watermark, (_key, timestamp, namespace) => this.#onTimer(timestamp, namespace, true));
    this.outputTimestamps = this.#collector.timestamps;
    return this.#collector.records;
  }

  override onProcessingTime(now: number): OUT[] {
    this.#now = now;
    this.#collector.reset(true);
    this.#backend.pollTimersUpTo('processing', now, (_key, timestamp, namespace) => this.#onTimer(timestamp, namespace, false));
    const next = this.#backend.nextTimerTimestamp('processing');
    if (next !== undefined) this.#context.requestProcessingTimeCallback(next);
    this.outputTimestamps = this.#collector.timestamps;
    return this.#collector.records;
  }

  override close(): void {
    this.#options.windowFunction?.close?.();
  }

  /** Non-merging windows: adds the record to each window not yet late; returns whether every window was late. */
  #addToWindows(value: IN, timestamp: number, windows: W[]): boolean {
    const { trigger, contents } = this.#options;
    const context = this.#triggerContext;
    let skipped = true;
    for (const window of windows) {
      if (this.#isWindowLate(window)) continue;
      skipped = false;
      const namespace = windowNamespace(window);
      context.set(window, namespace);
      const accumulator = contents.add(this.#contents.get(namespace), value);
      this.#contents.put(namespace, accumulator);
      const result = trigger.onElement(value, timestamp, window, context);
      if (isFire(result)) this.#emit(window, accumulator);
      if (isPurge(result)) this.#contents.remove(namespace);
      this.#registerCleanupTimer(window, namespace);
    }
    return skipped;
  }

  /** Session windows: the record's window merges with the key's windows it overlaps (Flink's MergingWindowSet). */
  #addToMergingWindows(value: IN, timestamp: number, windows: W[]): boolean {
    const { trigger, contents } = this.#options;
    const windowSet = this.#windowSet as MapState<string, 1>;
    const context = this.#triggerContext;
    let skipped = true;
    for (const window of windows) {
      const existing = [...windowSet.keys()].map((namespace) => windowOfNamespace(namespace) as TimeWindow);
      let actual = window as unknown as TimeWindow;
      const overlapping: TimeWindow[] = [];
      for (let grown = true; grown; ) {
        grown = false;
        for (const candidate of existing) {
          if (overlapping.includes(candidate) || !candidate.intersects(actual)) continue;
          overlapping.push(candidate);
          actual = actual.cover(candidate);
          grown = true;
        }
      }
      const mergedAway = overlapping.filter((candidate) => !candidate.equals(actual));
      const actualNamespace = windowNamespace(actual);
      // A new window the watermark has passed takes nothing; one merged with live windows never is late.
      if (overlapping.length === 0 && this.#isWindowLate(actual as W)) continue;
      if (mergedAway.length > 0) {
        context.set(actual as W, actualNamespace, mergedAway.map(windowNamespace));
        trigger.onMerge?.(actual as W, context);
        let accumulator = this.#contents.get(actualNamespace);
        for (const merged of mergedAway) {
          const namespace = windowNamespace(merged);
          context.set(merged as W, namespace);
          trigger.clear(merged as W, context);
          this.#deleteCleanupTimer(merged as W, namespace);
          const state = this.#contents.get(namespace);
          if (state !== undefined) accumulator = accumulator === undefined ? state : contents.merge(accumulator, state);
          this.#contents.remove(namespace);
          windowSet.remove(namespace);
        }
        if (accumulator !== undefined) this.#contents.put(actualNamespace, accumulator);
      }
      skipped = false;
      windowSet.put(actualNamespace, 1);
      context.set(actual as W, actualNamespace);
      const accumulator = contents.add(this.#contents.get(actualNamespace), value);
      this.#contents.put(actualNamespace, accumulator);
      const result = trigger.onElement(value, timestamp, actual as W, context);
      if (isFire(result)) this.#emit(actual as W, accumulator);
      if (isPurge(result)) this.#contents.remove(actualNamespace);
      this.#registerCleanupTimer(actual as W, actualNamespace);
    }
    return skipped;
  }

  /** A timer of the current key fired for the window `namespace`. */
  #onTimer(timestamp: number, namespace: string, eventTime: boolean): void {
    const { trigger } = this.#options;
    if (this.#windowSet !== undefined && !this.#windowSet.has(namespace)) return; // merged away or cleaned up already
    const window = windowOfNamespace(namespace) as W;
    const context = this.#triggerContext;
    context.set(window, namespace);
    const accumulator = this.#contents.get(namespace);
    if (accumulator !== undefined) {
      const result = eventTime ? trigger.onEventTime(timestamp, window, context) : trigger.onProcessingTime(timestamp, window, context);
      if (isFire(result)) this.#emit(window, accumulator);
      if (isPurge(result)) this.#contents.remove(namespace);
    }
    if (eventTime === this.#eventTime && timestamp === this.#cleanupTime(window)) {
      this.#contents.remove(namespace);
      context.set(window, namespace);
      trigger.clear(window, context);
      this.#windowSet?.remove(namespace);
    }
  }

  /**
   * The window fires: its result (an aggregate's getResult) through the window function. A throw
   * goes to the error policy as a firing of this key's window (what it emitted is dropped), and the
   * trigger's purge and the window's cleanup go on as if it had fired.
   */
  #emit(window: W, accumulator: ACC): void {
    const collector = this.#collector;
    const mark = collector.records.length;
    try {
      const results = this.#options.contents.result(accumulator);
      collector.timestamp = window.maxTimestamp();
      const fn = this.#options.windowFunction;
      if (fn === undefined) {
        for (const result of results) collector.collect(result as unknown as OUT);
        return;
      }
      this.#processContext.window = window;
      fn.process(decodeKey(this.#backend.getCurrentKey() as StateKey) as K, this.#processContext, results, collector);
    } catch (error) {
      collector.truncate(mark);
      const key = this.#backend.getCurrentKey() as StateKey;
      const time = Number.isFinite(window.maxTimestamp()) ? window.maxTimestamp() : undefined;
      const bounds = 'start' in window ? { start: window.start, end: window.end } : 'global';
      this.#errors.onCallError(
        error,
        `firing the window ${window} of key ${keyText(key)}`,
        { key: decodeKey(key), window: bounds },
        this.#eventTime ? time : undefined,
      );
    }
  }

  /** When a window's state goes: its end plus the allowed lateness in event time, its end in processing time. */
  #cleanupTime(window: W): number {
    return this.#eventTime ? window.maxTimestamp() + this.#options.allowedLateness : window.maxTimestamp();
  }

  #isWindowLate(window: W): boolean {
    return this.#eventTime && this.#cleanupTime(window) <= this.#watermark;
  }

  #registerCleanupTimer(window: W, namespace: string): void {
    const time = this.#cleanupTime(window);
    if (!Number.isFinite(time)) return; // the global window is never cleaned up
    if (this.#eventTime) this.#backend.registerTimer('event', time, namespace);
    else {
      this.#backend.registerTimer('processing', time, namespace);
      this.#context.requestProcessingTimeCallback(time);
    }
  }

  #deleteCleanupTimer(window: W, namespace: string): void {
    const time = this.#cleanupTime(window);
    if (Number.isFinite(time)) this.#backend.deleteTimer(this.#eventTime ? 'event' : 'processing', time, namespace);
  }

  #noTimestamps(): WeirError {
    return new WeirError('NO_TIMESTAMPS', `operator "${this.#context.operatorName}" is an event-time window, but its records carry no timestamps`, {
      hint: 'give the source a watermark strategy with a timestamp assigner (records emitted by processing-time timers have no timestamp)',
    });
  }
}
