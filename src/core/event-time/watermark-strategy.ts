import { WeirError } from '../errors/weir-error.ts';
import { timeSetting } from '../time/time-setting.ts';

/**
 * Event time and watermarks at the source (Flink's WatermarkStrategy, TimestampAssigner and
 * WatermarkGenerator). A watermark W says: event time has reached W, no record with a timestamp
 * at or before W should come any more. Windows and event-time timers fire when the watermark
 * passes them. Timestamps and watermarks are milliseconds (of any epoch you choose, usually Unix).
 */

/** Where a generator sends watermarks (Flink's WatermarkOutput). */
export interface WatermarkOutput {
  emitWatermark(watermark: number): void;
  /** Nothing comes from here for now: leave it out of the minimum downstream. */
  markIdle(): void;
  markActive(): void;
}

/** Makes watermarks from the records' timestamps (Flink's WatermarkGenerator). */
export interface WatermarkGenerator<T> {
  /** Every record, with its timestamp; a punctuated generator may emit here (it goes out after the record's batch). */
  onEvent(event: T, eventTimestamp: number, output: WatermarkOutput): void;
  /** Called every watermark interval (processing time); a periodic generator emits here. */
  onPeriodicEmit(output: WatermarkOutput): void;
}

/**
 * The event time of a record (Flink's TimestampAssigner). `recordTimestamp` is the timestamp the
 * source itself gives the record (Kafka's record timestamp), undefined when it has none.
 */
export type TimestampAssigner<T> = (element: T, recordTimestamp: number | undefined) => number;

/** The default watermark interval: how often periodic generators are asked for a watermark (Flink's 200 ms). */
export const DEFAULT_WATERMARK_INTERVAL_MS = 200;

interface StrategySettings<T> {
  readonly createGenerator: (() => WatermarkGenerator<T>) | undefined;
  readonly timestampAssigner: TimestampAssigner<T> | undefined;
  readonly idleTimeoutMs: number | undefined;
  readonly intervalMs: number;
  readonly description: string;
}

/**
 * How a source assigns event time and makes watermarks. Builders never mutate: each call returns
 * a new strategy.
 *
 * ```ts
 * env.fromSource(kafkaSource<Payment>({ ... }), {
 *   uid: 'payments',
 *   watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<Payment>('5s')
 *     .withTimestampAssigner((payment) => payment.ts)
 *     .withIdleness('1m'),
 * });
 * ```
 *
 * Watermarks are made per split (per Kafka partition) and the source subtask emits their minimum,
 * leaving out idle splits, as Flink's sources do.
 */
export class WatermarkStrategy<T> {
  readonly #settings: StrategySettings<T>;

  private constructor(settings: StrategySettings<T>) {
    this.#settings = settings;
  }

  /**
   * Watermarks that trail the highest timestamp seen by `maxOutOfOrderness` (plus 1 ms): a record
   * at most that much older than the newest one is still on time. Milliseconds or text (`5s`).
   */
  static forBoundedOutOfOrderness<T>(maxOutOfOrderness: number | string): WatermarkStrategy<T> {
    const bound = timeSetting(maxOutOfOrderness, 'WatermarkStrategy.forBoundedOutOfOrderness(maxOutOfOrderness)', {
      positive: false,
      fix: "give how much later than the newest record a record may arrive and still be on time, e.g. forBoundedOutOfOrderness('5s'); 0 for timestamps that never go back",
    });
    return new WatermarkStrategy<T>({
      createGenerator: () => new BoundedOutOfOrdernessWatermarks<T>(bound),
      timestampAssigner: undefined,
      idleTimeoutMs: undefined,
      intervalMs: DEFAULT_WATERMARK_INTERVAL_MS,
      description: `forBoundedOutOfOrderness(${bound} ms)`,
    });
  }

  /** For timestamps that only ever rise within a split: the watermark is the highest timestamp seen, minus 1 ms. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>({
      createGenerator: () => new BoundedOutOfOrdernessWatermarks<T>(0),
      timestampAssigner: undefined,
      idleTimeoutMs: undefined,
      intervalMs: DEFAULT_WATERMARK_INTERVAL_MS,
      description: 'forMonotonousTimestamps()',
    });
  }

  /** Your own generator; `create` is called once per split. */
  static forGenerator<T>(create: () => WatermarkGenerator<T>): WatermarkStrategy<T> {
    if (typeof create !== 'function') {
      throw new WeirError('INVALID_WATERMARK_STRATEGY', 'WatermarkStrategy.forGenerator(create): create is not a function', {
        hint: 'pass a function that returns a new WatermarkGenerator ({ onEvent, onPeriodicEmit }) each time it is called',
      });
    }
    return new WatermarkStrategy<T>({
      createGenerator: create,
      timestampAssigner: undefined,
      idleTimeoutMs: undefined,
      intervalMs: DEFAULT_WATERMARK_INTERVAL_MS,
      description: 'forGenerator(...)',
    });
  }

  /** No event time at all (the default when a source has no strategy): event-time windows and joins cannot follow it. */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>({
      createGenerator: undefined,
      timestampAssigner: undefined,
      idleTimeoutMs: undefined,
      intervalMs: DEFAULT_WATERMARK_INTERVAL_MS,
      description: 'noWatermarks()',
    });
  }

  /**
   * Where a record's event time comes from. Without one, the source's own record timestamp is used
   * (Kafka's); a source without record timestamps then fails on its first record.
   */
  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    if (typeof assigner !== 'function') {
      throw new WeirError('INVALID_WATERMARK_STRATEGY', 'WatermarkStrategy.withTimestampAssigner(assigner): assigner is not a function', {
        hint: 'pass a function from a record to its event time in milliseconds: (record) => record.ts',
      });
    }
    return new WatermarkStrategy<T>({ ...this.#settings, timestampAssigner: assigner });
  }

  /**
   * A split (or a whole source subtask) that has had no record for `timeout` is marked idle: it no
   * longer holds the watermark back, so windows of the other splits keep firing. Its next record
   * makes it active again (that record may then be late). Milliseconds or text (`30s`).
   */
  withIdleness(timeout: number | string): WatermarkStrategy<T> {
    const idleTimeoutMs = timeSetting(timeout, 'WatermarkStrategy.withIdleness(timeout)', {
      positive: true,
      fix: "give the time without records after which a split counts as idle, e.g. withIdleness('30s')",
    });
    return new WatermarkStrategy<T>({ ...this.#settings, idleTimeoutMs });
  }

  /**
   * How often periodic generators are asked for a watermark (Flink's auto-watermark interval,
   * default 200 ms): lower means lower latency for windows, at a little more work per second.
   */
  withWatermarkInterval(interval: number | string): WatermarkStrategy<T> {
    const intervalMs = timeSetting(interval, 'WatermarkStrategy.withWatermarkInterval(interval)', {
      positive: true,
      fix: "give how often watermarks are emitted, e.g. withWatermarkInterval('200ms')",
    });
    return new WatermarkStrategy<T>({ ...this.#settings, intervalMs });
  }

  /** @internal Whether this strategy makes watermarks (false for noWatermarks). */
  get hasWatermarks(): boolean {
    return this.#settings.createGenerator !== undefined;
  }

  /** @internal */
  createWatermarkGenerator(): WatermarkGenerator<T> {
    const create = this.#settings.createGenerator;
    if (create === undefined) throw new WeirError('NO_WATERMARKS', 'WatermarkStrategy.noWatermarks() makes no watermarks', { fault: 'internal' });
    return create();
  }

  /** @internal */
  get timestampAssigner(): TimestampAssigner<T> | undefined {
    return this.#settings.timestampAssigner;
  }

  /** @internal */
  get idleTimeoutMs(): number | undefined {
    return this.#settings.idleTimeoutMs;
  }

  /** @internal */
  get watermarkIntervalMs(): number {
    return this.#settings.intervalMs;
  }

  toString(): string {
    const settings = this.#settings;
    return `WatermarkStrategy.${settings.description}${settings.idleTimeoutMs === undefined ? '' : `.withIdleness(${settings.idleTimeoutMs} ms)`}`;
  }
}

/**
 * Flink's BoundedOutOfOrdernessWatermarks: tracks the highest timestamp and emits it minus the
 * bound minus 1 ms on every periodic emit.
 */
export class BoundedOutOfOrdernessWatermarks<T> implements WatermarkGenerator<T> {
  readonly #bound: number;
  #maxTimestamp = Number.NEGATIVE_INFINITY;

  constructor(maxOutOfOrdernessMs: number) {
    if (!Number.isFinite(maxOutOfOrdernessMs) || maxOutOfOrdernessMs < 0) {
      throw new WeirError('INVALID_WATERMARK_STRATEGY', `maxOutOfOrderness must be 0 or more milliseconds, got ${maxOutOfOrdernessMs}`, {
        hint: "give how late a record may be, e.g. WatermarkStrategy.forBoundedOutOfOrderness('5s')",
      });
    }
    this.#bound = maxOutOfOrdernessMs;
  }

  onEvent(_event: T, eventTimestamp: number): void {
    if (eventTimestamp > this.#maxTimestamp) this.#maxTimestamp = eventTimestamp;
  }

  onPeriodicEmit(output: WatermarkOutput): void {
    output.emitWatermark(this.#maxTimestamp - this.#bound - 1);
  }
}
