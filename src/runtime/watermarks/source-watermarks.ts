import { WeirError } from '../../core/errors/weir-error.ts';
import type { WatermarkGenerator, WatermarkOutput, WatermarkStrategy } from '../../core/event-time/watermark-strategy.ts';
import type { WatermarkEvent } from './status-watermark-valve.ts';

/** The records of a reader that names no splits all go to this one output. */
const READER_OUTPUT = '';

/** One split's watermark (Flink's split-local output of the WatermarkOutputMultiplexer), with its idleness timer. */
class SplitWatermarkOutput implements WatermarkOutput {
  readonly generator: WatermarkGenerator<unknown>;
  watermark = Number.NEGATIVE_INFINITY;
  idle = false;
  /** Records seen; idleness compares it between periodic emits (Flink's IdlenessTimer). */
  activity = 0;
  #lastActivity = 0;
  #inactiveSince: number | undefined;

  constructor(generator: WatermarkGenerator<unknown>) {
    this.generator = generator;
  }

  emitWatermark(watermark: number): void {
    if (watermark > this.watermark) this.watermark = watermark;
    this.idle = false;
  }

  markIdle(): void {
    this.idle = true;
  }

  markActive(): void {
    this.idle = false;
  }

  /** Whether no record came for `timeout` ms of processing time, as seen from the periodic emits. */
  checkIfIdle(now: number, timeout: number): boolean {
    if (this.activity !== this.#lastActivity) {
      this.#lastActivity = this.activity;
      this.#inactiveSince = undefined;
      return false;
    }
    if (this.#inactiveSince === undefined) {
      this.#inactiveSince = now;
      return false;
    }
    return now - this.#inactiveSince >= timeout;
  }
}

/**
 * The event time of one source subtask (Flink's SourceOperator with ProgressiveTimestampsAndWatermarks
 * and its WatermarkOutputMultiplexer): assigns each record its timestamp, feeds it to the watermark
 * generator of its split, and combines the splits' watermarks into the subtask's: the minimum over
 * the splits that are not idle. With no split active (all idle, or none assigned) the subtask is
 * idle. The combined watermark only rises.
 *
 * A source with {@link Source.splitId} gets one output per split: the splits it was given are
 * registered when it opens, so a split without data holds the watermark back until it is idle (set
 * an idleness timeout), as in Flink; splits first seen later are registered on their first record.
 * Other sources have one output for the whole reader.
 */
export class SourceWatermarks {
  readonly #strategy: WatermarkStrategy<unknown>;
  readonly #sourceName: string;
  readonly #perSplit: boolean;
  readonly #outputs = new Map<string, SplitWatermarkOutput>();
  readonly #idleTimeout: number | undefined;
  readonly #interval: number;
  #nextPeriodic: number;
  #lastEmitted = Number.NEGATIVE_INFINITY;
  #idle = false;
  #dirty = false;

  constructor(options: { strategy: WatermarkStrategy<unknown>; sourceName: string; splitIds: string[] | undefined; now: number }) {
    this.#strategy = options.strategy;
    this.#sourceName = options.sourceName;
    this.#perSplit = options.splitIds !== undefined;
    this.#idleTimeout = options.strategy.idleTimeoutMs;
    this.#interval = options.strategy.watermarkIntervalMs;
    this.#nextPeriodic = options.now + this.#interval;
    for (const id of options.splitIds ?? [READER_OUTPUT]) this.#output(id);
  }

  /** Call once after construction: a subtask without any split starts out idle. */
  start(out: WatermarkEvent[]): void {
    this.#combine(out);
  }

  /** The watermark last emitted (-Infinity before the first). */
  get currentWatermark(): number {
    return this.#lastEmitted;
  }

  /**
   * Event times of a batch from the reader (`recordTimestamps` and `splitIds` from its
   * {@link SourceBatch}): runs the timestamp assigner and the generators of the records' splits.
   * A split that was idle is active again at once, so `out` says so before the batch goes out.
   */
  assign(
    records: readonly unknown[],
    recordTimestamps: readonly number[] | undefined,
    splitIds: readonly string[] | undefined,
    out: WatermarkEvent[],
  ): number[] {
    const assigner = this.#strategy.timestampAssigner;
    const timestamps = new Array<number>(records.length);
    const perSplit = this.#perSplit && splitIds !== undefined;
    let currentId: string | undefined;
    let output = perSplit ? undefined : this.#output(READER_OUTPUT);
    for (let i = 0; i < records.length; i++) {
      const record = records[i];
      if (perSplit) {
        const id = splitIds[i] as string;
        if (id !== currentId) {
          currentId = id;
          output = this.#output(id);
        }
      }
      const split = output as SplitWatermarkOutput;
      const own = recordTimestamps?.[i];
      const timestamp = assigner === undefined ? own : assigner(record, own);
      if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw this.#badTimestamp(timestamp, assigner !== undefined);
      timestamps[i] = timestamp;
      split.activity++;
      if (split.idle) {
        split.idle = false;
        this.#dirty = true;
      }
      const before = split.watermark;
      split.generator.onEvent(record, timestamp, split);
      if (split.watermark !== before || split.idle) this.#dirty = true;
    }
    if (this.#dirty) this.#combine(out);
    return timestamps;
  }

  /** Splits that finished: their outputs go (Flink's releaseOutputForSplit), so they no longer hold the watermark back. */
  releaseSplits(splitIds: readonly string[], out: WatermarkEvent[]): void {
    if (!this.#perSplit) return;
    for (const id of splitIds) this.#outputs.delete(id);
    // The last split gone: the subtask is idle until a new one comes (a bounded source then ends).
    this.#combine(out);
  }

  /** Called from the source loop: every watermark interval, asks each split's generator for a watermark and checks idleness. */
  onProcessingTime(now: number, out: WatermarkEvent[]): void {
    if (now < this.#nextPeriodic) return;
    this.#nextPeriodic = now + this.#interval;
    const timeout = this.#idleTimeout;
    for (const split of this.#outputs.values()) {
      if (timeout !== undefined && split.checkIfIdle(now, timeout)) split.markIdle();
      else split.generator.onPeriodicEmit(split);
    }
    this.#combine(out);
  }

  #output(id: string): SplitWatermarkOutput {
    let output = this.#outputs.get(id);
    if (output === undefined) {
      output = new SplitWatermarkOutput(this.#strategy.createWatermarkGenerator());
      this.#outputs.set(id, output);
    }
    return output;
  }

  #combine(out: WatermarkEvent[]): void {
    this.#dirty = false;
    let minimum = Number.POSITIVE_INFINITY;
    let active = false;
    for (const split of this.#outputs.values()) {
      if (split.idle) continue;
      active = true;
      if (split.watermark < minimum) minimum = split.watermark;
    }
    if (!active) {
      if (!this.#idle) {
        this.#idle = true;
        out.push({ kind: 'idle' });
      }
      return;
    }
    if (this.#idle) {
      this.#idle = false;
      out.push({ kind: 'active' });
    }
    if (minimum > this.#lastEmitted) {
      this.#lastEmitted = minimum;
      out.push({ kind: 'watermark', watermark: minimum });
    }
  }

  #badTimestamp(timestamp: unknown, fromAssigner: boolean): WeirError {
    if (!fromAssigner && (timestamp === undefined || Number.isNaN(timestamp))) {
      return new WeirError(
        'NO_TIMESTAMP_ASSIGNER',
        `source "${this.#sourceName}" gives its records no timestamp of its own, and its watermark strategy has no timestamp assigner`,
        {
          hint: 'add one to the strategy: WatermarkStrategy.forBoundedOutOfOrderness<T>(...).withTimestampAssigner((record) => record.ts)',
        },
      );
    }
    return new WeirError(
      'INVALID_TIMESTAMP',
      `the timestamp assigner of source "${this.#sourceName}" returned ${typeof timestamp === 'number' ? timestamp : (JSON.stringify(timestamp) ?? String(timestamp))} for a record`,
      { hint: 'return the event time of every record as a finite number of milliseconds' },
    );
  }
}
