import type { Source, SourceBatch, SourceReader, SourceReaderContext } from '../../core/connector/source.ts';

/** One split of the sequence: the numbers index, index + stride, index + 2 * stride, ... below `end`. */
export interface DataGenSplit {
  index: number;
  stride: number;
  /** The next sequence number this split emits. */
  next: number;
  /** Exclusive bound; null for an unbounded split. */
  end: number | null;
}

export interface DataGenRecord {
  seq: number;
  key: string;
  amount: number;
}

export interface DataGenOptions<T> {
  /** How many records in all; leave out for an unbounded source. */
  count?: number;
  /** The rate of the whole source, over all its subtasks; leave out for as fast as possible. */
  recordsPerSecond?: number;
  /** Splits of the sequence (the most subtasks that can read in parallel). Default 16. */
  splits?: number;
  /** Distinct keys of the default record. Default 100. */
  keys?: number;
  /** Turns a sequence number into a record; it must be deterministic. */
  generate?: (seq: number) => T;
}

/**
 * A deterministic generator (Flink's DataGeneratorSource / NumberSequenceSource): the sequence
 * numbers 0, 1, 2, ... split into strided splits, each record a pure function of its number. The
 * position in each split is checkpointed, so after a failure exactly the same records follow.
 * With a watermark strategy, each split gets its own watermarks (split id: its index).
 */
export function dataGenSource<T = DataGenRecord>(options: DataGenOptions<T> = {}): Source<T, DataGenSplit> {
  const splitCount = options.splits ?? 16;
  const keys = options.keys ?? 100;
  const generate = options.generate ?? ((seq: number) => ({ seq, key: `key-${seq % keys}`, amount: (seq % 10) + 1 }) as T);
  const count = options.count;
  return {
    name: 'datagen',
    bounded: count !== undefined,
    createInitialSplits: () => Array.from({ length: splitCount }, (_, index) => ({ index, stride: splitCount, next: index, end: count ?? null })),
    createReader: (context) => new DataGenReader<T>(generate, options.recordsPerSecond, context),
    splitId: (split) => String(split.index),
  };
}

class DataGenReader<T> implements SourceReader<T, DataGenSplit> {
  #splits: DataGenSplit[] = [];
  #cursor = 0;
  readonly #generate: (seq: number) => T;
  readonly #ratePerMs: number | undefined;
  #tokens = 0;
  #lastRefill = Date.now();
  readonly #tracksSplits: boolean;

  constructor(generate: (seq: number) => T, recordsPerSecond: number | undefined, context: SourceReaderContext) {
    this.#generate = generate;
    this.#tracksSplits = context.tracksSplits === true;
    this.#ratePerMs = recordsPerSecond === undefined ? undefined : recordsPerSecond / context.parallelism / 1000;
  }

  open(splits: DataGenSplit[]): void {
    this.#splits = splits.map((split) => ({ ...split }));
  }

  pollNext(max: number): T[] | null {
    return this.#poll(max, undefined);
  }

  /** With the split of each record, for per-split watermarks. */
  pollNextBatch(max: number): SourceBatch<T> | null {
    const splitIds: string[] | undefined = this.#tracksSplits ? [] : undefined;
    const live = this.#tracksSplits ? this.#splits.filter((split) => split.end === null || split.next < split.end) : [];
    const records = this.#poll(max, splitIds);
    if (records === null) return null;
    // Splits this poll finished: their watermarks stop holding the others back.
    const finishedSplitIds = live.filter((split) => split.end !== null && split.next >= split.end).map((split) => String(split.index));
    return { records, splitIds, finishedSplitIds };
  }

  #poll(max: number, splitIds: string[] | undefined): T[] | null {
    const live = this.#splits.filter((split) => split.end === null || split.next < split.end);
    if (live.length === 0) return null;
    let budget = max;
    if (this.#ratePerMs !== undefined) {
      const now = Date.now();
      this.#tokens = Math.min(this.#tokens + (now - this.#lastRefill) * this.#ratePerMs, Math.max(1, this.#ratePerMs * 100));
      this.#lastRefill = now;
      budget = Math.min(budget, Math.floor(this.#tokens));
      if (budget <= 0) return [];
      this.#tokens -= budget;
    }
    const out: T[] = [];
    const generate = this.#generate;
    // Round-robin over the live splits, a run of records from each.
    while (out.length < budget) {
      const split = live[this.#cursor++ % live.length] as DataGenSplit;
      const run = Math.min(budget - out.length, 64);
      const id = String(split.index);
      for (let i = 0; i < run && (split.end === null || split.next < split.end); i++) {
        out.push(generate(split.next));
        splitIds?.push(id);
        split.next += split.stride;
      }
      if (live.every((candidate) => candidate.end !== null && candidate.next >= candidate.end)) break;
    }
    return out;
  }

  snapshotState(): DataGenSplit[] {
    return this.#splits.map((split) => ({ ...split }));
  }

  close(): void {}
}
