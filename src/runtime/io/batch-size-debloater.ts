import type { EnvironmentConfig } from '../../core/config/environment-config.ts';

/** What sizes a channel's (or a source's) batches: the job's `network.debloat` settings and its `batchSize`. */
export interface DebloatOptions {
  /** How long the records in flight should take to process, in ms. */
  target: number;
  /** The time each throughput sample covers, in ms. */
  period: number;
  /** Samples the throughput is averaged over (an exponential moving average). */
  samples: number;
  /** The smallest batch, in records. */
  minBatchSize: number;
  /** The largest batch, in records: the job's `batchSize`, today's bound. */
  maxBatchSize: number;
}

/** The debloat options of a job, or undefined when `network.debloat.enabled` is false. */
export function debloatOptions(config: Pick<EnvironmentConfig, 'batchSize' | 'network'>): DebloatOptions | undefined {
  const debloat = config.network?.debloat;
  if (debloat === undefined || !debloat.enabled) return undefined;
  return {
    target: debloat.target,
    period: debloat.period,
    samples: debloat.samples,
    minBatchSize: Math.min(debloat.minBatchSize, config.batchSize),
    maxBatchSize: config.batchSize,
  };
}

/**
 * Buffer debloating (Flink's BufferDebloater with its ThroughputCalculator, FLIP-183), in records:
 * from the records a consumer got through in the time it was busy with them, averaged over
 * `samples` periods, the batch size that makes `batchesInFlight` batches take about `target` to
 * process, between `minBatchSize` and `maxBatchSize`. It sees one sample per period, never a
 * record: the callers add up a batch's records and time.
 *
 * Unlike Flink, which starts at the largest buffer, it starts at the smallest batch until its
 * first sample: a task that starts into back pressure, as a restart behind a backlog does,
 * would otherwise fill each channel with `channelCredits` full batches first, and its first
 * checkpoints would wait behind them. Until its first full period it sizes after every batch
 * consumed, on the rate over everything so far, and the size at most doubles per update (a slow
 * start, as TCP's): a consumer's first batches can look far faster than it is (an async
 * operator's empty queue takes them at once, then each slot waits for an answer), and a batch
 * sent too large stays ahead of the next barrier, which waits for the task to get through it. A
 * fast consumer still reaches full batches within its first few (8 -> 512 in six), and one slow
 * first batch (a cold start) holds nothing down for long. Shrinking is never held back.
 */
export class BatchSizeDebloater {
  readonly #options: DebloatOptions;
  readonly #batchesInFlight: number;
  readonly #alpha: number;
  #records = 0;
  #busyMs = 0;
  /** Records per ms, averaged; undefined before the first batch consumed. */
  #throughput: number | undefined;
  #batchSize: number;
  #warmingUp = true;

  constructor(options: DebloatOptions, batchesInFlight: number) {
    this.#options = options;
    this.#batchesInFlight = Math.max(1, batchesInFlight);
    this.#alpha = 2 / (options.samples + 1);
    this.#batchSize = options.minBatchSize;
  }

  /** The batch size to use now, in records. */
  get batchSize(): number {
    return this.#batchSize;
  }

  /** The averaged throughput in records per second (undefined before the first batch consumed). */
  get throughput(): number | undefined {
    return this.#throughput === undefined ? undefined : this.#throughput * 1000;
  }

  /** `records` were consumed in `busyMs` of busy time; a full period of it updates the batch size. */
  add(records: number, busyMs: number): void {
    this.#records += records;
    this.#busyMs += busyMs;
    if (this.#busyMs <= 0) return;
    if (this.#warmingUp) {
      // Until the first full period: the rate over everything so far, after every batch consumed,
      // so one slow first batch (a cold start) does not hold the size down for a period.
      this.#throughput = this.#records / this.#busyMs;
      this.#resize();
      if (this.#busyMs < this.#options.period) return;
      this.#warmingUp = false;
      this.#records = 0;
      this.#busyMs = 0;
      return;
    }
    if (this.#busyMs < this.#options.period) return;
    const sample = this.#records / this.#busyMs;
    this.#records = 0;
    this.#busyMs = 0;
    this.#throughput = (this.#throughput as number) + this.#alpha * (sample - (this.#throughput as number));
    this.#resize();
  }

  /** The size for the throughput now, grown at most twofold (a slow start), shrunk at once. */
  #resize(): void {
    const wanted = batchSizeFor((this.#throughput as number) * 1000, this.#options, this.#batchesInFlight);
    this.#batchSize = Math.min(wanted, this.#batchSize * 2);
  }
}

/** The batch size that makes `batchesInFlight` batches about `target` of processing at `recordsPerSecond`, within the bounds. */
export function batchSizeFor(recordsPerSecond: number, options: DebloatOptions, batchesInFlight: number): number {
  const desired = Math.round((recordsPerSecond * options.target) / 1000 / Math.max(1, batchesInFlight));
  return Math.min(options.maxBatchSize, Math.max(options.minBatchSize, Number.isFinite(desired) ? desired : options.maxBatchSize));
}
