import type { MessageRecord } from '@platformatic/kafka';

/**
 * The most bytes (estimated) of records one produce request carries, so no partition's batch in
 * it exceeds the brokers' default max.message.bytes (1 MiB).
 */
export const BATCH_BYTES_LIMIT = 768 * 1024;

/** Splits records into runs of at most BATCH_BYTES_LIMIT bytes, in their order (a record larger than the limit is a run of its own). */
export function* chunksBelowBatchLimit(records: MessageRecord[]): Generator<MessageRecord[]> {
  let chunk: MessageRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = estimatedRecordSize(record);
    if (bytes + size > BATCH_BYTES_LIMIT && chunk.length > 0) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(record);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

/** About how many bytes a record takes in a record batch. */
export function estimatedRecordSize(record: MessageRecord): number {
  let size = 32 + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  if (record.headers !== undefined) for (const [name, value] of record.headers) size += name.length + value.length + 8;
  return size;
}
