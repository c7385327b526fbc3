import { WeirError } from '../core/errors/weir-error.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { OutputTag } from '../core/functions/output-tag.ts';
import type { ProcessJoinFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import { signedTimeSetting } from '../core/time/time-setting.ts';
import { IntervalJoinOperator } from '../runtime/operators/interval-join-operator.ts';
import type { IntervalJoin, IntervalJoined, KeyedStream, SingleOutputStreamOperator } from './data-stream.ts';
import type { StreamFactory } from './stream-factory.ts';
import { addOperator, addOperatorDeadLetters, errorPolicyOf, type ProcessingOptions } from './stream-transformations.ts';

/** The {@link IntervalJoin} of a job's graph. */
export class IntervalJoinImpl<T1, T2, K extends KeyLike> implements IntervalJoin<T1, T2, K> {
  readonly #factory: StreamFactory;
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;

  constructor(factory: StreamFactory, left: KeyedStream<T1, K>, right: KeyedStream<T2, K>) {
    this.#factory = factory;
    this.#left = left;
    this.#right = right;
  }

  between(lower: number | string, upper: number | string): IntervalJoined<T1, T2, K> {
    const lowerBound = signedTimeSetting(lower, 'intervalJoin(...).between(lower, upper): lower');
    const upperBound = signedTimeSetting(upper, 'intervalJoin(...).between(lower, upper): upper');
    if (lowerBound > upperBound) {
      throw new WeirError(
        'INVALID_JOIN_BOUNDS',
        `intervalJoin(...).between(lower, upper): lower (${lowerBound} ms) is above upper (${upperBound} ms), so nothing could ever join`,
        {
          hint: "give the bounds in order, e.g. between('-5s', '5s')",
        },
      );
    }
    return new IntervalJoinedImpl<T1, T2, K>(this.#factory, this.#left, this.#right, { lowerBound, upperBound, lowerInclusive: true, upperInclusive: true });
  }
}

interface Bounds {
  lowerBound: number;
  upperBound: number;
  lowerInclusive: boolean;
  upperInclusive: boolean;
  leftLate?: OutputTag<unknown> | undefined;
  rightLate?: OutputTag<unknown> | undefined;
}

/** The {@link IntervalJoined} of a job's graph. Builders never mutate. */
export class IntervalJoinedImpl<T1, T2, K extends KeyLike> implements IntervalJoined<T1, T2, K> {
  readonly #factory: StreamFactory;
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;
  readonly #bounds: Bounds;

  constructor(factory: StreamFactory, left: KeyedStream<T1, K>, right: KeyedStream<T2, K>, bounds: Bounds) {
    this.#factory = factory;
    this.#left = left;
    this.#right = right;
    this.#bounds = bounds;
  }

  lowerBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoinedImpl(this.#factory, this.#left, this.#right, { ...this.#bounds, lowerInclusive: false });
  }

  upperBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoinedImpl(this.#factory, this.#left, this.#right, { ...this.#bounds, upperInclusive: false });
  }

  sideOutputLeftLateData(tag: OutputTag<T1>): IntervalJoined<T1, T2, K> {
    return new IntervalJoinedImpl(this.#factory, this.#left, this.#right, { ...this.#bounds, leftLate: tag as OutputTag<unknown> });
  }

  sideOutputRightLateData(tag: OutputTag<T2>): IntervalJoined<T1, T2, K> {
    return new IntervalJoinedImpl(this.#factory, this.#left, this.#right, { ...this.#bounds, rightLate: tag as OutputTag<unknown> });
  }

  process<R>(fn: ProcessJoinFunction<T1, T2, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const bounds = this.#bounds;
    // Flink moves an exclusive bound by 1 ms, so the operator only knows inclusive ones.
    const lowerBound = bounds.lowerInclusive ? bounds.lowerBound : bounds.lowerBound + 1;
    const upperBound = bounds.upperInclusive ? bounds.upperBound : bounds.upperBound - 1;
    if (lowerBound > upperBound) {
      throw new WeirError(
        'INVALID_JOIN_BOUNDS',
        `intervalJoin(...): the exclusive bounds leave no interval (${bounds.lowerBound} ms to ${bounds.upperBound} ms)`,
        {
          hint: 'widen the bounds or make them inclusive',
        },
      );
    }
    const leftKey = this.#left.upstream.keySelector as KeySelector<T1>;
    const rightKey = this.#right.upstream.keySelector as KeySelector<T2>;
    const onError = errorPolicyOf(options, 'interval-join');
    const output = addOperator(this.#factory.graph, [this.#left.upstream, this.#right.upstream], {
      kind: 'interval-join',
      createOperator: () =>
        new IntervalJoinOperator<T1, T2, R>({
          lowerBound,
          upperBound,
          leftKeySelector: leftKey,
          rightKeySelector: rightKey,
          fn,
          leftLateDataTag: bounds.leftLate as OutputTag<T1> | undefined,
          rightLateDataTag: bounds.rightLate as OutputTag<T2> | undefined,
          onError,
        }) as StreamOperator<unknown, unknown>,
      options,
      needsWatermarks: 'an interval join (event time)',
    });
    addOperatorDeadLetters(this.#factory.graph, output, options);
    return this.#factory.operatorOutput<R>(output);
  }
}
