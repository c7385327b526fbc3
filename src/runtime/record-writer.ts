import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import type { KeySelector, Partitioning } from '../graph/stream-graph.ts';
import { assignToKeyGroup, computeOperatorIndexForKeyGroup, validateStateKey } from '../state/key-group-range-assignment.ts';
import type { ChannelWriter } from './channels.ts';

/**
 * The sending side of one job edge of a subtask (Flink's RecordWriter with its partitioner): splits
 * each output batch over the edge's channels. `writers[i]` goes to target subtask i (for forward,
 * the single channel to the same index).
 */
export class RecordWriter {
  readonly writers: ChannelWriter[];
  readonly #partitioning: Partitioning;
  readonly #keySelector: KeySelector<unknown> | undefined;
  readonly #maxParallelism: number;
  readonly #operatorName: string;
  #nextRebalance: number;

  constructor(options: {
    writers: ChannelWriter[];
    partitioning: Partitioning;
    keySelector: KeySelector<unknown> | undefined;
    maxParallelism: number;
    operatorName: string;
    subtaskIndex: number;
  }) {
    this.writers = options.writers;
    this.#partitioning = options.partitioning;
    this.#keySelector = options.keySelector;
    this.#maxParallelism = options.maxParallelism;
    this.#operatorName = options.operatorName;
    this.#nextRebalance = options.subtaskIndex % Math.max(1, options.writers.length);
  }

  get available(): boolean {
    for (const writer of this.writers) if (!writer.available) return false;
    return true;
  }

  emit(batch: unknown[]): void {
    if (batch.length === 0) return;
    const writers = this.writers;
    switch (this.#partitioning) {
      case 'forward':
        (writers[0] as ChannelWriter).sendBatch(batch);
        return;
      case 'rebalance':
        (writers[this.#nextRebalance] as ChannelWriter).sendBatch(batch);
        this.#nextRebalance = (this.#nextRebalance + 1) % writers.length;
        return;
      case 'broadcast':
        for (const writer of writers) writer.sendBatch(batch);
        return;
      case 'hash': {
        const parallelism = writers.length;
        if (parallelism === 1) {
          (writers[0] as ChannelWriter).sendBatch(batch);
          return;
        }
        const select = this.#keySelector as KeySelector<unknown>;
        const maxParallelism = this.#maxParallelism;
        const buckets: unknown[][] = new Array(parallelism);
        for (let i = 0; i < batch.length; i++) {
          const record = batch[i];
          const keyGroup = assignToKeyGroup(validateStateKey(select(record), this.#operatorName), maxParallelism);
          const target = computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup);
          const bucket = buckets[target];
          if (bucket === undefined) buckets[target] = [record];
          else bucket.push(record);
        }
        for (let target = 0; target < parallelism; target++) {
          const bucket = buckets[target];
          if (bucket !== undefined) (writers[target] as ChannelWriter).sendBatch(bucket);
        }
        return;
      }
    }
  }

  broadcastBarrier(location: CheckpointLocation): void {
    for (const writer of this.writers) writer.sendBarrier(location);
  }

  broadcastEndOfData(): void {
    for (const writer of this.writers) writer.sendEndOfData();
  }
}
