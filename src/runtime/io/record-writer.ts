import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { Partitioning } from '../../graph/stream-graph.ts';
import { assignToKeyGroup, computeOperatorIndexForKeyGroup, validateStateKey } from '../../state/key-group-range-assignment.ts';
import type { ChannelWriter } from './channel-writer.ts';
import type { CheckpointOptions } from './checkpointing/checkpoint-options.ts';

/**
 * The sending side of one job edge of a subtask (Flink's RecordWriter with its partitioner): splits
 * each output batch (and its records' timestamps) over the edge's channels. `writers[i]` goes to
 * target subtask i (for forward, the single channel to the same index). Watermarks, watermark
 * statuses, barriers and end-of-data go to every channel.
 */
export class RecordWriter {
  readonly writers: ChannelWriter[];
  /** The side output this edge carries (an OutputTag's id), undefined for the main output. */
  readonly outputTag: string | undefined;
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
    outputTag?: string | undefined;
  }) {
    this.writers = options.writers;
    this.outputTag = options.outputTag;
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

  /**
   * The largest batch this edge takes now without a channel going below zero credit, in records
   * (Infinity without debloating): the smallest channel's batch size, times the channels for a hash
   * edge, whose batches spread over them.
   */
  get batchSize(): number {
    let smallest = Number.POSITIVE_INFINITY;
    for (const writer of this.writers) if (writer.batchSize < smallest) smallest = writer.batchSize;
    return this.#partitioning === 'hash' ? smallest * this.writers.length : smallest;
  }

  /** Sends a batch; `timestamps[i]` is the event time of `batch[i]` (undefined: the records have none). */
  emit(batch: unknown[], timestamps?: number[]): void {
    if (batch.length === 0) return;
    const writers = this.writers;
    switch (this.#partitioning) {
      case 'forward':
        (writers[0] as ChannelWriter).sendBatch(batch, timestamps);
        return;
      case 'rebalance':
        (writers[this.#nextRebalance] as ChannelWriter).sendBatch(batch, timestamps);
        this.#nextRebalance = (this.#nextRebalance + 1) % writers.length;
        return;
      case 'broadcast':
        for (const writer of writers) writer.sendBatch(batch, timestamps);
        return;
      case 'hash': {
        const parallelism = writers.length;
        if (parallelism === 1) {
          (writers[0] as ChannelWriter).sendBatch(batch, timestamps);
          return;
        }
        const select = this.#keySelector as KeySelector<unknown>;
        const maxParallelism = this.#maxParallelism;
        const buckets: unknown[][] = new Array(parallelism);
        if (timestamps === undefined) {
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
        const stamps: number[][] = new Array(parallelism);
        for (let i = 0; i < batch.length; i++) {
          const record = batch[i];
          const keyGroup = assignToKeyGroup(validateStateKey(select(record), this.#operatorName), maxParallelism);
          const target = computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup);
          const bucket = buckets[target];
          if (bucket === undefined) {
            buckets[target] = [record];
            stamps[target] = [timestamps[i] as number];
          } else {
            bucket.push(record);
            (stamps[target] as number[]).push(timestamps[i] as number);
          }
        }
        for (let target = 0; target < parallelism; target++) {
          const bucket = buckets[target];
          if (bucket !== undefined) (writers[target] as ChannelWriter).sendBatch(bucket, stamps[target]);
        }
        return;
      }
    }
  }

  broadcastBarrier(location: CheckpointLocation, options?: CheckpointOptions): void {
    for (const writer of this.writers) writer.sendBarrier(location, options);
  }

  broadcastWatermark(watermark: number): void {
    for (const writer of this.writers) writer.sendWatermark(watermark);
  }

  broadcastWatermarkStatus(idle: boolean): void {
    for (const writer of this.writers) writer.sendWatermarkStatus(idle);
  }

  broadcastEndOfData(): void {
    for (const writer of this.writers) writer.sendEndOfData();
  }
}
