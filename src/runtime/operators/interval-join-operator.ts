import { WeirError } from '../../core/errors/weir-error.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { ProcessJoinContext, ProcessJoinFunction } from '../../core/functions/process-functions.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import { mapState } from '../../core/state/state-descriptors.ts';
import type { MapState } from '../../core/state/state-types.ts';
import { validateStateKey } from '../../state/key-group-range-assignment.ts';
import { keyedRuntimeContext, requireKeyedState } from './keyed-process-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';
import { TimestampedCollector } from './timestamped-collector.ts';

export interface IntervalJoinOptions<L, R, OUT> {
  /** Inclusive bounds, in ms relative to the left record's timestamp: a right record joins when right.ts - left.ts is in [lower, upper]. */
  lowerBound: number;
  upperBound: number;
  leftKeySelector: KeySelector<L>;
  rightKeySelector: KeySelector<R>;
  fn: ProcessJoinFunction<L, R, OUT>;
  leftLateDataTag: OutputTag<L> | undefined;
  rightLateDataTag: OutputTag<R> | undefined;
  /** What a pair whose function throws does (the dead letter holds { left, right }). */
  onError?: RecordErrorPolicy;
}

const LEFT = 'left';
const RIGHT = 'right';

/**
 * Joins two keyed streams on event time (Flink's IntervalJoinOperator): each side's records are
 * buffered in keyed map state by timestamp; a record joins every buffered record of the other side
 * of its key whose timestamp lies within the bounds, and the pair goes to the function with the
 * later of the two timestamps. A cleanup timer per side and timestamp drops a buffered record once
 * the watermark shows no partner can come any more. A record behind the watermark is late: it goes
 * to its side's late output, or is counted in `numLateRecordsDropped`.
 */
export class IntervalJoinOperator<L, R, OUT> extends StreamOperator<L, OUT> implements ProcessJoinContext {
  readonly #options: IntervalJoinOptions<L, R, OUT>;
  #backend!: KeyedStateBackend;
  #context!: OperatorContext;
  #leftBuffer!: MapState<number, L[]>;
  #rightBuffer!: MapState<number, R[]>;
  #lateDropped!: MetricCounter;
  #watermark = Number.NEGATIVE_INFINITY;
  readonly #collector = new TimestampedCollector<OUT>();
  #leftTimestamp = 0;
  #rightTimestamp = 0;
  readonly #errors: RecordErrorHandler;

  constructor(options: IntervalJoinOptions<L, R, OUT>) {
    super();
    this.#options = options;
    this.#errors = new RecordErrorHandler(options.onError);
  }

  override open(context: OperatorContext): void {
    this.#backend = requireKeyedState(context, 'intervalJoin(...)');
    this.#context = context;
    this.#errors.open(context);
    this.#leftBuffer = this.#backend.getState(mapState<number, L[]>('interval-join-left'));
    this.#rightBuffer = this.#backend.getState(mapState<number, R[]>('interval-join-right'));
    this.#lateDropped = context.metrics.counter('numLateRecordsDropped');
    this.#options.fn.open?.(keyedRuntimeContext(context, this.#backend));
  }

  processBatch(batch: L[], timestamps?: readonly number[]): OUT[] {
    const { lowerBound, upperBound, leftKeySelector, leftLateDataTag } = this.#options;
    this.#collector.reset(true);
    this.#process(batch, timestamps, leftKeySelector, this.#leftBuffer, this.#rightBuffer, lowerBound, upperBound, true, leftLateDataTag);
    this.outputTimestamps = this.#collector.timestamps;
    return this.#collector.records;
  }

  override processBatch2(batch: unknown[], timestamps?: readonly number[]): OUT[] {
    const { lowerBound, upperBound, rightKeySelector, rightLateDataTag } = this.#options;
    this.#collector.reset(true);
    this.#process(batch as R[], timestamps, rightKeySelector, this.#rightBuffer, this.#leftBuffer, -upperBound, -lowerBound, false, rightLateDataTag);
    this.outputTimestamps = this.#collector.timestamps;
    return this.#collector.records;
  }

  #process<OUR, OTHER>(
    batch: OUR[],
    timestamps: readonly number[] | undefined,
    select: KeySelector<OUR>,
    ours: MapState<number, OUR[]>,
    others: MapState<number, OTHER[]>,
    relativeLower: number,
    relativeUpper: number,
    isLeft: boolean,
    lateTag: OutputTag<OUR> | undefined,
  ): void {
    const backend = this.#backend;
    const name = this.#context.operatorName;
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as OUR;
      const timestamp = timestamps?.[i];
      if (timestamp === undefined || Number.isNaN(timestamp)) {
        throw new WeirError(
          'NO_TIMESTAMPS',
          `operator "${name}" is an interval join, but its ${isLeft ? 'left' : 'right'} input's records carry no timestamps`,
          {
            hint: 'give the sources of both inputs a watermark strategy with a timestamp assigner',
          },
        );
      }
      backend.setCurrentKey(validateStateKey(select(value), name));
      if (this.#watermark !== Number.NEGATIVE_INFINITY && timestamp < this.#watermark) {
        if (lateTag === undefined || !this.#context.output(lateTag.id, value, timestamp)) this.#lateDropped.inc();
        continue;
      }
      const bucket = ours.get(timestamp);
      if (bucket === undefined) ours.put(timestamp, [value]);
      else bucket.push(value);
      for (const [otherTimestamp, otherValues] of others.entries()) {
        if (otherTimestamp < timestamp + relativeLower || otherTimestamp > timestamp + relativeUpper) continue;
        for (const other of otherValues) {
          if (isLeft) this.#join(value as unknown as L, other as unknown as R, timestamp, otherTimestamp);
          else this.#join(other as unknown as L, value as unknown as R, otherTimestamp, timestamp);
        }
      }
      const cleanupTime = relativeUpper > 0 ? timestamp + relativeUpper : timestamp;
      backend.registerTimer('event', cleanupTime, isLeft ? LEFT : RIGHT);
    }
  }

  /** One pair through the function; a throw goes to the error policy with the pair as its record (what it emitted is dropped). */
  #join(left: L, right: R, leftTimestamp: number, rightTimestamp: number): void {
    this.#leftTimestamp = leftTimestamp;
    this.#rightTimestamp = rightTimestamp;
    const timestamp = Math.max(leftTimestamp, rightTimestamp);
    this.#collector.timestamp = timestamp;
    const mark = this.#collector.records.length;
    try {
      this.#options.fn.processElement(left, right, this, this.#collector);
    } catch (error) {
      this.#collector.truncate(mark);
      this.#errors.onError(error, { left, right }, timestamp);
    }
  }

  override processWatermark(watermark: number): OUT[] {
    this.#watermark = watermark;
    const { lowerBound, upperBound } = this.#options;
    this.#backend.pollTimersUpTo('event', watermark, (_key, timestamp, namespace) => {
      if (namespace === LEFT) this.#leftBuffer.remove(upperBound <= 0 ? timestamp : timestamp - upperBound);
      else if (namespace === RIGHT) this.#rightBuffer.remove(lowerBound <= 0 ? timestamp + lowerBound : timestamp);
    });
    return [];
  }

  override close(): void {
    this.#options.fn.close?.();
  }

  // ProcessJoinContext, for the function's call on a pair.
  leftTimestamp(): number {
    return this.#leftTimestamp;
  }

  rightTimestamp(): number {
    return this.#rightTimestamp;
  }

  timestamp(): number {
    return Math.max(this.#leftTimestamp, this.#rightTimestamp);
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.#context.output(tag.id, value, this.timestamp());
  }
}
