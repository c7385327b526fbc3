import type { KafkaSplit } from './kafka-split.ts';
import type { TopicRecord } from './partition-fetcher.ts';
import { decodeRecords, type FetchedBatch } from './record-batch-reader.ts';

/**
 * A split's part of one fetch: its visible batches, decoded one at a time as records are emitted
 * (the Java consumer's CompletedFetch), so a record lives from its batch's turn to its emission
 * and what waits is the fetch's bytes, not objects.
 */
export interface FetchedQueue {
  batches: FetchedBatch[];
  nextBatch: number;
  fetchOffset: bigint;
  /** A bounded split's end: records from it on are not the source's. */
  end: bigint | null;
  /** The batch being emitted, decoded. */
  records: TopicRecord[];
  /** The decoded batch the deserializer has prepared for (its `prepare`, when it has one). */
  prepared?: TopicRecord[];
  next: number;
  nextOffset: bigint;
}

/** Decodes the queue's next batches until one has records for the split; false when none is left. */
export function decodeNextBatch(queue: FetchedQueue, split: KafkaSplit): boolean {
  queue.records = [];
  queue.next = 0;
  while (queue.records.length === 0 && queue.nextBatch < queue.batches.length) {
    const batch = queue.batches[queue.nextBatch++] as FetchedBatch;
    decodeRecords(batch, split.topic, split.partition, queue.fetchOffset, queue.records);
    if (queue.end !== null) {
      const end = queue.end;
      const past = queue.records.findIndex((record) => record.offset >= end);
      if (past >= 0) {
        queue.records.length = past;
        queue.nextBatch = queue.batches.length; // nothing after it is the split's
      }
    }
  }
  return queue.records.length > 0;
}
