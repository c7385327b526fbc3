import { WeirError } from '../../core/errors/weir-error.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyLike, StateKey } from '../../core/state/state-key.ts';
import { timeSetting } from '../../core/time/time-setting.ts';
import type { Trigger } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';
import type { WindowAssigner } from '../../core/windowing/window-assigner.ts';
import type { AggregateFunction, ProcessWindowFunction, ReduceFunction } from '../../core/windowing/window-functions.ts';
import { type WindowContents, WindowOperator } from '../../runtime/operators/window-operator.ts';
import type { SingleOutputStreamOperator, WindowedStream } from '../data-stream.ts';
import type { StreamFactory } from '../stream-factory.ts';
import { addOperator, addOperatorDeadLetters, errorPolicyOf, type ProcessingOptions, type Upstream } from '../stream-transformations.ts';

interface WindowSettings<T, W extends Window> {
  trigger: Trigger<T, W> | undefined;
  allowedLateness: number;
  lateDataTag: OutputTag<T> | undefined;
}

const isWindowFunction = (value: unknown): value is ProcessWindowFunction<unknown, unknown, KeyLike, Window> =>
  typeof (value as { process?: unknown } | undefined)?.process === 'function';

/** The {@link WindowedStream} of a job's graph. */
export class WindowedStreamImpl<T, K extends KeyLike, W extends Window> implements WindowedStream<T, K, W> {
  readonly #factory: StreamFactory;
  readonly #upstream: Upstream;
  readonly #assigner: WindowAssigner<T, W>;
  readonly #settings: WindowSettings<T, W>;

  constructor(factory: StreamFactory, upstream: Upstream, assigner: WindowAssigner<T, W>, settings?: WindowSettings<T, W>) {
    if (typeof assigner?.assignWindows !== 'function') {
      throw new WeirError('INVALID_WINDOW', 'window(assigner): the assigner is not a WindowAssigner', {
        hint: "pass one such as TumblingEventTimeWindows.of('1m'), SlidingEventTimeWindows.of('10m', '1m') or EventTimeSessionWindows.withGap('30m')",
      });
    }
    this.#factory = factory;
    this.#upstream = upstream;
    this.#assigner = assigner;
    this.#settings = settings ?? { trigger: undefined, allowedLateness: 0, lateDataTag: undefined };
  }

  trigger(trigger: Trigger<T, W> | Trigger<unknown, W> | Trigger<unknown, Window>): WindowedStream<T, K, W> {
    if (this.#assigner.isMerging && trigger.canMerge?.() !== true) {
      throw new WeirError(
        'INVALID_TRIGGER',
        `trigger ${trigger} cannot be used with ${this.#assigner}: session windows merge, and the trigger does not support merging`,
        {
          hint: 'give the trigger canMerge() { return true } and onMerge(...), or use a non-merging window assigner',
        },
      );
    }
    return new WindowedStreamImpl(this.#factory, this.#upstream, this.#assigner, { ...this.#settings, trigger: trigger as Trigger<T, W> });
  }

  allowedLateness(lateness: number | string): WindowedStream<T, K, W> {
    const allowedLateness = timeSetting(lateness, 'window(...).allowedLateness(lateness)', {
      positive: false,
      fix: "give how long after its end a window still takes late records, e.g. allowedLateness('30s'); 0 for none",
    });
    return new WindowedStreamImpl(this.#factory, this.#upstream, this.#assigner, { ...this.#settings, allowedLateness });
  }

  sideOutputLateData(tag: OutputTag<T>): WindowedStream<T, K, W> {
    return new WindowedStreamImpl(this.#factory, this.#upstream, this.#assigner, { ...this.#settings, lateDataTag: tag });
  }

  reduce(fn: ReduceFunction<T>, options?: ProcessingOptions): SingleOutputStreamOperator<T>;
  reduce<R>(fn: ReduceFunction<T>, windowFunction: ProcessWindowFunction<T, R, K, W>, options?: ProcessingOptions): SingleOutputStreamOperator<R>;
  reduce<R>(
    fn: ReduceFunction<T>,
    second?: ProcessWindowFunction<T, R, K, W> | ProcessingOptions,
    third?: ProcessingOptions,
  ): SingleOutputStreamOperator<R> | SingleOutputStreamOperator<T> {
    if (typeof fn !== 'function') throw invalidFunction('reduce(fn)', 'a function (a, b) => combined');
    const contents: WindowContents<T, T, T> = {
      add: (accumulator, value) => (accumulator === undefined ? value : fn(accumulator, value)),
      merge: (a, b) => fn(a, b),
      result: (accumulator) => [accumulator],
    };
    const [windowFunction, options] = isWindowFunction(second) ? [second, third] : [undefined, second as ProcessingOptions | undefined];
    return this.#build('reduce', contents, windowFunction as ProcessWindowFunction<T, R, K, W> | undefined, options ?? {});
  }

  aggregate<ACC, V>(fn: AggregateFunction<T, ACC, V>, options?: ProcessingOptions): SingleOutputStreamOperator<V>;
  aggregate<ACC, V, R>(
    fn: AggregateFunction<T, ACC, V>,
    windowFunction: ProcessWindowFunction<V, R, K, W>,
    options?: ProcessingOptions,
  ): SingleOutputStreamOperator<R>;
  aggregate<ACC, V, R>(
    fn: AggregateFunction<T, ACC, V>,
    second?: ProcessWindowFunction<V, R, K, W> | ProcessingOptions,
    third?: ProcessingOptions,
  ): SingleOutputStreamOperator<R> | SingleOutputStreamOperator<V> {
    for (const method of ['createAccumulator', 'add', 'getResult'] as const) {
      if (typeof fn?.[method] !== 'function')
        throw invalidFunction(`aggregate(fn): fn.${method}`, 'the AggregateFunction methods createAccumulator, add and getResult');
    }
    const merge = fn.merge;
    if (this.#assigner.isMerging && typeof merge !== 'function') {
      throw new WeirError('AGGREGATE_MERGE_MISSING', `aggregate(fn) on ${this.#assigner}: session windows merge, so the AggregateFunction needs merge(a, b)`, {
        hint: 'add merge(a, b) returning the accumulator of both, e.g. merge: (a, b) => a + b',
      });
    }
    const contents: WindowContents<T, ACC, V> = {
      add: (accumulator, value) => fn.add(value, accumulator === undefined ? fn.createAccumulator() : accumulator),
      merge: (a, b) => (merge as (a: ACC, b: ACC) => ACC).call(fn, a, b),
      result: (accumulator) => [fn.getResult(accumulator)],
    };
    const [windowFunction, options] = isWindowFunction(second) ? [second, third] : [undefined, second as ProcessingOptions | undefined];
    return this.#build('aggregate', contents, windowFunction as ProcessWindowFunction<V, R, K, W> | undefined, options ?? {});
  }

  process<R>(fn: ProcessWindowFunction<T, R, K, W>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    if (!isWindowFunction(fn)) throw invalidFunction('process(fn)', 'a ProcessWindowFunction: { process(key, context, elements, out) { ... } }');
    const contents: WindowContents<T, T[], T> = {
      add: (accumulator, value) => {
        if (accumulator === undefined) return [value];
        accumulator.push(value);
        return accumulator;
      },
      merge: (a, b) => a.concat(b),
      result: (accumulator) => accumulator,
    };
    return this.#build('window', contents, fn, options);
  }

  #build<ACC, V, R>(
    kind: string,
    contents: WindowContents<T, ACC, V>,
    windowFunction: ProcessWindowFunction<V, R, K, W> | undefined,
    options: ProcessingOptions,
  ): SingleOutputStreamOperator<R> {
    const assigner = this.#assigner;
    const trigger = this.#settings.trigger ?? assigner.defaultTrigger();
    const { allowedLateness, lateDataTag } = this.#settings;
    const keySelector = this.#upstream.keySelector as KeySelector<T>;
    const onError = errorPolicyOf(options, kind);
    const output = addOperator(this.#factory.graph, [this.#upstream], {
      kind,
      createOperator: () =>
        new WindowOperator<T, ACC, V, R, K, W>({
          assigner,
          trigger,
          allowedLateness: assigner.isEventTime ? allowedLateness : 0,
          lateDataTag,
          keySelector,
          contents,
          windowFunction,
          onError,
        }) as unknown as StreamOperator<unknown, unknown>,
      options: { name: kind, ...options },
      keySelector: this.#upstream.keySelector,
      needsWatermarks: assigner.isEventTime ? `an event-time window (${assigner})` : undefined,
    });
    addOperatorDeadLetters(this.#factory.graph, output, options);
    return this.#factory.operatorOutput<R>(output);
  }
}

function invalidFunction(what: string, expected: string): WeirError {
  return new WeirError('INVALID_WINDOW_FUNCTION', `window(...).${what} is not what a window needs`, { hint: `pass ${expected}` });
}
