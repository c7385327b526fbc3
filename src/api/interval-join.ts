import { WeirError } from '../core/errors/weir-error.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { OutputTag } from '../core/functions/output-tag.ts';
import type { ProcessJoinFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { StateKey } from '../core/state/state-key.ts';
import { signedTimeSetting } from '../core/time/time-setting.ts';
import { IntervalJoinOperator } from '../runtime/operators/interval-join-operator.ts';
import { addOperator, type KeyedStream, type OperatorOptions, type SingleOutputStreamOperator } from './data-stream.ts';

/** `left.intervalJoin(right)`: give the bounds next (Flink's KeyedStream.IntervalJoin). */
export class IntervalJoin<T1, T2, K extends StateKey> {
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;

  /** @internal */
  constructor(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>) {
    this.#left = left;
    this.#right = right;
  }

  /**
   * A right record joins a left one when `left.ts + lower <= right.ts <= left.ts + upper`.
   * Milliseconds or text, negative allowed: `between('-5s', '5s')`.
   */
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
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, { lowerBound, upperBound, lowerInclusive: true, upperInclusive: true });
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

/** An interval join with its bounds (Flink's IntervalJoined). Builders never mutate. */
export class IntervalJoined<T1, T2, K extends StateKey> {
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;
  readonly #bounds: Bounds;

  /** @internal */
  constructor(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>, bounds: Bounds) {
    this.#left = left;
    this.#right = right;
    this.#bounds = bounds;
  }

  lowerBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined(this.#left, this.#right, { ...this.#bounds, lowerInclusive: false });
  }

  upperBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined(this.#left, this.#right, { ...this.#bounds, upperInclusive: false });
  }

  /** Left records behind the watermark go here instead of being dropped (counted in numLateRecordsDropped). */
  sideOutputLeftLateData(tag: OutputTag<T1>): IntervalJoined<T1, T2, K> {
    return new IntervalJoined(this.#left, this.#right, { ...this.#bounds, leftLate: tag as OutputTag<unknown> });
  }

  sideOutputRightLateData(tag: OutputTag<T2>): IntervalJoined<T1, T2, K> {
    return new IntervalJoined(this.#left, this.#right, { ...this.#bounds, rightLate: tag as OutputTag<unknown> });
  }

  /** Calls `fn` for every pair; what it emits carries the later of the pair's timestamps. */
  process<R>(fn: ProcessJoinFunction<T1, T2, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
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
    return addOperator<R>(this.#left.graph, [this.#left.upstream, this.#right.upstream], {
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
        }) as StreamOperator<unknown, unknown>,
      options,
      needsWatermarks: 'an interval join (event time)',
    });
  }
}
