import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import { BatchSizeDebloater, type DebloatOptions, debloatOptions } from '../io/batch-size-debloater.ts';
import type { RecordWriter } from '../io/record-writer.ts';

/**
 * The batch size of a source task's polls under buffer debloating (`network.debloat`). A barrier
 * waits behind the batch the source's chain is processing and behind the records in flight on its
 * output channels, so a poll takes no more than:
 * - what its output channels take now (their batch sizes follow their receivers' consumption), and
 * - half of `target` of the task's own throughput (records polled per time between polls, a poll
 *   that found nothing left out), which matters when the slow operator is chained to the source.
 * Called once per poll; it adds up the records the task took in since the last call.
 */
export class SourceBatchSizer {
  readonly #debloater: BatchSizeDebloater;
  readonly #writers: readonly RecordWriter[];
  readonly #recordsIn: () => number;
  #lastRecords: number;
  #lastAt: number;

  constructor(options: DebloatOptions, writers: readonly RecordWriter[], recordsIn: () => number) {
    // Two batches per target: the one in the chain, and the next the barrier may wait behind.
    this.#debloater = new BatchSizeDebloater(options, 2);
    this.#writers = writers;
    this.#recordsIn = recordsIn;
    this.#lastRecords = recordsIn();
    this.#lastAt = performance.now();
  }

  /** The batch size of the next poll. */
  next(): number {
    const now = performance.now();
    const recordsIn = this.#recordsIn();
    const records = recordsIn - this.#lastRecords;
    if (records > 0) this.#debloater.add(records, now - this.#lastAt); // a poll that found nothing is idle time, left out
    this.#lastRecords = recordsIn;
    this.#lastAt = now;
    let size = this.#debloater.batchSize;
    for (const writer of this.#writers) {
      const edge = writer.batchSize;
      if (edge < size) size = edge;
    }
    return size;
  }
}

/** A source task's poll size under `network.debloat`, or undefined when it is off (the polls take `batchSize`). */
export function sourceBatchSizer(
  config: Pick<EnvironmentConfig, 'batchSize' | 'network'>,
  writers: readonly RecordWriter[],
  metrics: { readonly recordsIn: number },
): (() => number) | undefined {
  const options = debloatOptions(config);
  if (options === undefined) return undefined;
  const sizer = new SourceBatchSizer(options, writers, () => metrics.recordsIn);
  return () => sizer.next();
}
