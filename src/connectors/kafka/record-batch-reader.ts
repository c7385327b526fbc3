import { WeirError } from '../../core/errors/weir-error.ts';
import { compressionsAlgorithmsByBitmask } from './kafka-protocol.ts';
import { BATCH_HEADER_BYTES } from './record-batch-builder.ts';
import type { TopicRecord } from './topic-record.ts';

/** A record batch (magic 2) of a fetch response, its records still bytes: they are decoded only when the batch is visible. */
export interface FetchedBatch {
  firstOffset: bigint;
  lastOffsetDelta: number;
  attributes: number;
  firstTimestamp: bigint;
  producerId: bigint;
  recordCount: number;
  /** The records' bytes, decompressed. */
  records: Buffer;
  /** A control batch's type (the int16 after the version in its record's key: 0 abort, 1 commit); -1 for a data batch. */
  controlType: number;
}

/** Record batch v2: base offset (8) and batch length (4), then 49 bytes of header to the record count. */
const LOG_OVERHEAD = 12;
const MAGIC_AT = 16;
const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const FIRST_TIMESTAMP_AT = 27;
const PRODUCER_ID_AT = 43;
const RECORD_COUNT_AT = 57;
const COMPRESSION_BITS = 0x07;
const IS_CONTROL = 0x20;

/**
 * The record batches of one partition's fetched bytes (a contiguous buffer), read the way the Java
 * consumer's CompletedFetch does: each batch's header at once, its records left as bytes
 * ({@link decodeRecords} turns the visible ones into records). A batch cut off at the end of the
 * bytes (the broker fills a fetch to its size limit) is left out: the next fetch starts at it.
 */
export function readRecordBatches(bytes: Buffer): FetchedBatch[] {
  const batches: FetchedBatch[] = [];
  let at = 0;
  while (bytes.length - at >= LOG_OVERHEAD) {
    const end = at + LOG_OVERHEAD + bytes.readInt32BE(at + 8);
    if (end > bytes.length) break;
    const magic = bytes.readInt8(at + MAGIC_AT);
    if (magic !== 2) {
      throw new WeirError(
        'UNSUPPORTED_RECORD_BATCH',
        `a fetched record batch has magic ${magic}; Weir reads record batches of magic 2 (Kafka 0.11 and later)`,
        {
          fault: 'external',
          hint: 'rewrite the topic with a current producer (brokers of Kafka 4 store magic 2 only)',
        },
      );
    }
    const attributes = bytes.readInt16BE(at + ATTRIBUTES_AT);
    const compression = attributes & COMPRESSION_BITS;
    let records = bytes.subarray(at + BATCH_HEADER_BYTES, end);
    if (compression !== 0) {
      const algorithm = compressionsAlgorithmsByBitmask[compression];
      if (algorithm === undefined) {
        throw new WeirError('UNSUPPORTED_RECORD_BATCH', `a fetched record batch is compressed with codec ${compression}, which this client cannot decompress`, {
          fault: 'external',
        });
      }
      records = algorithm.decompressSync(records) as Buffer;
    }
    const batch: FetchedBatch = {
      firstOffset: bytes.readBigInt64BE(at),
      lastOffsetDelta: bytes.readInt32BE(at + LAST_OFFSET_DELTA_AT),
      attributes,
      firstTimestamp: bytes.readBigInt64BE(at + FIRST_TIMESTAMP_AT),
      producerId: bytes.readBigInt64BE(at + PRODUCER_ID_AT),
      recordCount: bytes.readInt32BE(at + RECORD_COUNT_AT),
      records,
      controlType: -1,
    };
    if ((attributes & IS_CONTROL) !== 0) batch.controlType = controlType(records);
    batches.push(batch);
    at = end;
  }
  return batches;
}

/** The type in a control record's key (version int16, type int16); -1 when it has none. */
function controlType(records: Buffer): number {
  position = 0;
  varint(records); // length
  position += 1; // attributes
  varlong(records); // timestamp delta
  varint(records); // offset delta
  const keyLength = varint(records);
  return keyLength >= 4 && position + 4 <= records.length ? records.readInt16BE(position + 2) : -1;
}

/**
 * Appends a batch's records at or past `fetchOffset` to `into` (a batch comes back whole though a
 * fetch starts in its middle). Keys, values and headers are views of the fetched bytes, not copies.
 */
export function decodeRecords(batch: FetchedBatch, topic: string, partition: number, fetchOffset: bigint, into: TopicRecord[]): void {
  const bytes = batch.records;
  const { firstOffset, firstTimestamp, producerId } = batch;
  const skipBefore = fetchOffset > firstOffset ? Number(fetchOffset - firstOffset) : 0;
  position = 0;
  for (let index = 0; index < batch.recordCount; index++) {
    const length = varint(bytes);
    const end = position + length;
    position += 1; // attributes: unused in magic 2
    const timestampDelta = varlong(bytes);
    const offsetDelta = varint(bytes);
    if (offsetDelta < skipBefore) {
      position = end;
      continue;
    }
    const key = bytesField(bytes);
    const value = bytesField(bytes);
    const headerCount = varint(bytes);
    if (headerCount < 0 || headerCount > end - position) throw corrupt(topic, partition, firstOffset);
    const headers: [Buffer | null, Buffer | null][] = [];
    for (let header = 0; header < headerCount; header++) headers.push([bytesField(bytes), bytesField(bytes)]);
    if (position !== end || end > bytes.length) throw corrupt(topic, partition, firstOffset);
    into.push({
      topic,
      partition,
      offset: offsetDelta === 0 ? firstOffset : firstOffset + BigInt(offsetDelta),
      timestamp: timestampDelta === 0 ? firstTimestamp : firstTimestamp + BigInt(timestampDelta),
      key,
      value,
      headers,
      producerId,
    });
  }
}

function corrupt(topic: string, partition: number, firstOffset: bigint): WeirError {
  return new WeirError(
    'CORRUPT_RECORD_BATCH',
    `the record batch at ${topic}/${partition} offset ${firstOffset} does not decode (a record overruns its length)`,
    {
      fault: 'external',
      retriable: true,
    },
  );
}

// The read position in the buffer being decoded: module state, so reading a field allocates nothing.
let position = 0;

/** A zigzag varint (int32). */
function varint(bytes: Buffer): number {
  let byte = bytes[position++] as number;
  if (byte < 0x80) return (byte >>> 1) ^ -(byte & 1);
  let result = byte & 0x7f;
  let shift = 7;
  do {
    byte = bytes[position++] ?? 0;
    result |= (byte & 0x7f) << shift;
    shift += 7;
  } while (byte >= 0x80 && shift < 35);
  return (result >>> 1) ^ -(result & 1);
}

/** A zigzag varlong, as a number (exact to 2^53: a timestamp delta). */
function varlong(bytes: Buffer): number {
  let byte = bytes[position++] as number;
  if (byte < 0x80) return (byte >>> 1) ^ -(byte & 1);
  let result = byte & 0x7f;
  let scale = 128;
  do {
    byte = bytes[position++] ?? 0;
    result += (byte & 0x7f) * scale;
    scale *= 128;
  } while (byte >= 0x80 && scale < 2 ** 70);
  return result % 2 === 1 ? -(result + 1) / 2 : result / 2;
}

/** A varint-length byte string (-1: null), as a view. */
function bytesField(bytes: Buffer): Buffer | null {
  const length = varint(bytes);
  if (length < 0) return null;
  const start = position;
  position += length;
  return bytes.subarray(start, position);
}
