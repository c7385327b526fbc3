import type { fetchV17 as FetchV17, Reader } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import { createAPI, fetchV17 } from './kafka-protocol.ts';

export interface FetchedPartition {
  partitionIndex: number;
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  abortedTransactions: { producerId: bigint; firstOffset: bigint }[] | null;
  /** The partition's record batches as one contiguous buffer (null when it has none): read by record-batch-reader.ts. */
  records: Buffer | null;
}

export interface FetchedTopic {
  topicId: string;
  partitions: FetchedPartition[];
}

/**
 * Fetch (v17) with the request the client builds and an answer Weir reads itself: each partition's
 * records stay one buffer (a view of the response when it arrived in one socket chunk, else one
 * copy), decoded by {@link readRecordBatches} and {@link decodeRecords}. The client's reader turns
 * every record into an object through its multi-chunk buffer, where each read of a field scans the
 * chunks from the start: the cost of a record grew with the response's size. Partition errors are
 * returned in the answer for the caller to read; an error of the whole fetch is thrown.
 */
export const fetchRequest = createAPI<Parameters<typeof FetchV17.createRequest>, FetchedTopic[]>(1, 17, fetchV17.createRequest, parseFetchResponse);

function parseFetchResponse(_correlationId: number, _apiKey: number, _apiVersion: number, reader: Reader): FetchedTopic[] {
  reader.readInt32(); // throttle time
  const errorCode = reader.readInt16();
  if (errorCode !== 0) {
    throw Object.assign(new WeirError('FETCH_FAILED', `a fetch failed with Kafka error code ${errorCode}`, { fault: 'external', retriable: true }), {
      kafkaErrorCode: errorCode,
    });
  }
  reader.readInt32(); // session id
  return reader.readArray((topic) => ({
    topicId: topic.readUUID(),
    partitions: topic.readArray((r) => {
      const partitionIndex = r.readInt32();
      const partitionError = r.readInt16();
      const highWatermark = r.readInt64();
      const lastStableOffset = r.readInt64();
      r.readInt64(); // log start offset
      const abortedTransactions = r.readNullableArray((entry) => ({ producerId: entry.readInt64(), firstOffset: entry.readInt64() }));
      r.readInt32(); // preferred read replica
      // COMPACT_RECORDS: length + 1, 0 for null.
      const size = r.readUnsignedVarInt() - 1;
      let records: Buffer | null = null;
      if (size > 0) {
        records = r.buffer.slice(r.position, r.position + size);
        r.skip(size);
      }
      return { partitionIndex, errorCode: partitionError, highWatermark, lastStableOffset, abortedTransactions, records };
    }),
  }));
}
