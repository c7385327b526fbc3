import type { MessageRecord, produceV11 as ProduceV11 } from '@platformatic/kafka';
import { crc32c, createAPI, type NumericMap, produceV11, Writer } from './kafka-protocol.ts';

/** What a produce request carries besides its records: a transaction's producer id, epoch and the partitions' first sequence numbers ("topic:partition"). */
export interface ProduceRequestOptions {
  transactionalId?: string;
  producerId?: bigint;
  producerEpoch?: number;
  sequences?: NumericMap;
}

/** The size of a record batch's fields before its records (magic 2). */
const BATCH_HEADER_BYTES = 61;
/** The CRC covers a batch from its attributes (this offset) to its end. */
const CRC_START = 21;
const IS_TRANSACTIONAL = 1 << 4;

/**
 * Produce (v11) with record batches (magic 2, uncompressed) encoded in one pass into one buffer
 * per partition: the sizes first, then the bytes. The client's own encoder builds a buffer chunk
 * per field of every record and concatenates them twice, for the CRC and for the socket; this is
 * the sink's hot path. The envelope and the answer are the client's (`produceV11`).
 */
export const produceRequest = createAPI<
  [acks: number, timeoutMs: number, records: readonly MessageRecord[], options: ProduceRequestOptions],
  ProduceV11.ProduceResponse
>(0, 11, encodeProduceRequest, produceV11.parseResponse, true, true);

/** The body of a produce request (v11): the records grouped by topic, then partition, each partition's in their order. */
export function encodeProduceRequest(acks: number, timeoutMs: number, records: readonly MessageRecord[], options: ProduceRequestOptions): Writer {
  const topics = new Map<string, MessageRecord[][]>();
  let lastTopic: string | undefined;
  let partitions: MessageRecord[][] = [];
  for (const record of records) {
    if (record.topic !== lastTopic) {
      lastTopic = record.topic;
      let known = topics.get(record.topic);
      if (known === undefined) {
        known = [];
        topics.set(record.topic, known);
      }
      partitions = known;
    }
    const partition = record.partition ?? 0;
    const group = partitions[partition];
    if (group === undefined) partitions[partition] = [record];
    else group.push(record);
  }
  const now = Date.now();
  const writer = Writer.create().appendString(options.transactionalId).appendInt16(acks).appendInt32(timeoutMs);
  writer.appendUnsignedVarInt(topics.size + 1);
  for (const [topic, byPartition] of topics) {
    let count = 0;
    for (const group of byPartition) if (group !== undefined) count++;
    writer.appendString(topic).appendUnsignedVarInt(count + 1);
    for (let partition = 0; partition < byPartition.length; partition++) {
      const group = byPartition[partition];
      if (group === undefined) continue;
      const batch = encodeRecordBatch(group, options, options.sequences?.get(`${topic}:${partition}`) ?? -1, now);
      writer
        .appendInt32(partition)
        .appendUnsignedVarInt(batch.length + 1)
        .append(batch)
        .appendTaggedFields();
    }
    writer.appendTaggedFields();
  }
  return writer.appendTaggedFields();
}

/**
 * One record batch (magic 2, no compression) of `records`, with its CRC-32C. A record without a
 * timestamp gets `now`. Without a producer id the batch carries none (-1, as the Java producer's).
 */
export function encodeRecordBatch(records: readonly MessageRecord[], options: ProduceRequestOptions, firstSequence: number, now: number): Buffer {
  const count = records.length;
  const timestamps = new Float64Array(count);
  const bodySizes = new Int32Array(count);
  let firstTimestamp = 0;
  let maxTimestamp = 0;
  let size = BATCH_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    const record = records[i] as MessageRecord;
    const timestamp = record.timestamp === undefined ? now : Number(record.timestamp);
    timestamps[i] = timestamp;
    if (i === 0) firstTimestamp = maxTimestamp = timestamp;
    else if (timestamp > maxTimestamp) maxTimestamp = timestamp;
    let body = 1 + varLongSize(timestamp - firstTimestamp) + varIntSize(i) + bytesFieldSize(record.key) + bytesFieldSize(record.value);
    const headers = record.headers;
    if (headers === undefined || headers === null) body += 1;
    else {
      let headerCount = 0;
      for (const [name, value] of headerEntries(headers)) {
        headerCount++;
        body += bytesFieldSize(name) + bytesFieldSize(value);
      }
      body += varIntSize(headerCount);
    }
    bodySizes[i] = body;
    size += varIntSize(body) + body;
  }
  const buffer = Buffer.allocUnsafe(size);
  buffer.writeBigInt64BE(0n, 0); // base offset: the broker assigns it
  buffer.writeInt32BE(size - 12, 8);
  buffer.writeInt32BE(-1, 12); // partition leader epoch: the broker's
  buffer.writeInt8(2, 16);
  const producer = options.producerId !== undefined && options.producerId >= 0n;
  buffer.writeInt16BE(options.transactionalId === undefined ? 0 : IS_TRANSACTIONAL, 21);
  buffer.writeInt32BE(count - 1, 23);
  buffer.writeBigInt64BE(BigInt(firstTimestamp), 27);
  buffer.writeBigInt64BE(BigInt(maxTimestamp), 35);
  buffer.writeBigInt64BE(producer ? (options.producerId as bigint) : -1n, 43);
  buffer.writeInt16BE(producer ? (options.producerEpoch ?? 0) : -1, 51);
  buffer.writeInt32BE(producer ? firstSequence : -1, 53);
  buffer.writeInt32BE(count, 57);
  let offset = BATCH_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    const record = records[i] as MessageRecord;
    offset = writeVarInt(buffer, offset, bodySizes[i] as number);
    buffer[offset++] = 0; // attributes
    offset = writeVarLong(buffer, offset, (timestamps[i] as number) - firstTimestamp);
    offset = writeVarInt(buffer, offset, i);
    offset = writeBytesField(buffer, offset, record.key);
    offset = writeBytesField(buffer, offset, record.value);
    const headers = record.headers;
    if (headers === undefined || headers === null) buffer[offset++] = 0;
    else {
      offset = writeVarInt(buffer, offset, headers instanceof Map ? headers.size : Object.keys(headers).length);
      for (const [name, value] of headerEntries(headers)) {
        offset = writeBytesField(buffer, offset, name);
        offset = writeBytesField(buffer, offset, value);
      }
    }
  }
  // The client's crc32c reads a Writer's bytes in place (a Uint8Array it would copy first).
  buffer.writeUInt32BE(crc32c(Writer.create().append(buffer.subarray(CRC_START)).dynamicBuffer), 17);
  return buffer;
}

type Bytes = Buffer | string | null | undefined;

function headerEntries(headers: NonNullable<MessageRecord['headers']>): Iterable<[Bytes, Bytes]> {
  return (headers instanceof Map ? headers.entries() : Object.entries(headers)) as Iterable<[Bytes, Bytes]>;
}

function bytesFieldSize(bytes: Bytes): number {
  if (bytes === null || bytes === undefined) return 1;
  const length = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
  return varIntSize(length) + length;
}

function writeBytesField(buffer: Buffer, offset: number, bytes: Bytes): number {
  if (bytes === null || bytes === undefined) return writeVarInt(buffer, offset, -1);
  if (typeof bytes === 'string') {
    const length = Buffer.byteLength(bytes);
    const start = writeVarInt(buffer, offset, length);
    return start + buffer.write(bytes, start, 'utf8');
  }
  const start = writeVarInt(buffer, offset, bytes.length);
  return start + bytes.copy(buffer, start);
}

/** The bytes of a zigzag varint (a signed 32-bit value). */
function varIntSize(value: number): number {
  let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
  let size = 1;
  while (zigzag >= 0x80) {
    zigzag >>>= 7;
    size++;
  }
  return size;
}

function writeVarInt(buffer: Buffer, offset: number, value: number): number {
  let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
  while (zigzag >= 0x80) {
    buffer[offset++] = (zigzag & 0x7f) | 0x80;
    zigzag >>>= 7;
  }
  buffer[offset++] = zigzag;
  return offset;
}

/** The bytes of a zigzag varlong, for any safe integer (a timestamp delta in ms). */
function varLongSize(value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  let size = 1;
  while (zigzag >= 0x80) {
    zigzag = Math.floor(zigzag / 0x80);
    size++;
  }
  return size;
}

function writeVarLong(buffer: Buffer, offset: number, value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  while (zigzag >= 0x80) {
    buffer[offset++] = (zigzag % 0x80) | 0x80;
    zigzag = Math.floor(zigzag / 0x80);
  }
  buffer[offset++] = zigzag;
  return offset;
}
