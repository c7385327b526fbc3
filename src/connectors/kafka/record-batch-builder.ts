import type { MessageRecord } from '@platformatic/kafka';
import { crc32c, Writer } from './kafka-protocol.ts';

/** Who writes a batch: a transaction's id, producer id and epoch (none: a plain producer's batch, -1 as the Java producer's). */
export interface BatchProducer {
  transactionalId?: string;
  producerId?: bigint;
  producerEpoch?: number;
}

/**
 * One partition's records, encoded as a record batch (with its producer id, epoch and first
 * sequence): what a produce request carries, and what a retry resends unchanged, as the Java
 * producer resends a ProducerBatch. Once encoded, the records themselves are garbage: a batch
 * waiting or in flight holds one buffer, not an object or two per record.
 */
export interface EncodedBatch {
  readonly topic: string;
  readonly partition: number;
  readonly bytes: Buffer;
}

/** The size of a record batch's fields before its records (magic 2). */
export const BATCH_HEADER_BYTES = 61;
/** The CRC covers a batch from its attributes (this offset) to its end. */
const CRC_START = 21;
const IS_TRANSACTIONAL = 1 << 4;
/** A builder's first buffer; it doubles as records arrive. */
const INITIAL_CAPACITY = 16 * 1024;

/**
 * The record batch (magic 2, no compression) of one partition, written as records arrive (the
 * Java producer's MemoryRecordsBuilder): each record's body goes into the batch's buffer at once,
 * so a record the sink serialized dies young instead of waiting, as objects, for a request to
 * carry it. The header (producer id, epoch, first sequence, counts, timestamps, CRC-32C) is
 * written when the batch is sealed, just before it is sent. A record without a timestamp gets the
 * time it was appended.
 */
export class RecordBatchBuilder {
  readonly topic: string;
  readonly partition: number;
  #buffer: Buffer;
  #length = BATCH_HEADER_BYTES;
  #count = 0;
  #firstTimestamp = 0;
  #maxTimestamp = 0;

  constructor(topic: string, partition: number, capacity = INITIAL_CAPACITY) {
    this.topic = topic;
    this.partition = partition;
    this.#buffer = Buffer.allocUnsafe(Math.max(capacity, BATCH_HEADER_BYTES));
  }

  /** The records appended. */
  get count(): number {
    return this.#count;
  }

  /** The batch's size in bytes, header included. */
  get bytes(): number {
    return this.#length;
  }

  /**
   * Appends one record (after those appended before) and returns true, unless the batch has
   * records and this one would take it past `maxBytes`: then it returns false and leaves the batch
   * as it was (a record larger than `maxBytes` is a batch of its own).
   */
  append(record: MessageRecord, now: number, maxBytes = Number.POSITIVE_INFINITY): boolean {
    const timestamp = record.timestamp === undefined ? now : Number(record.timestamp);
    const first = this.#count === 0 ? timestamp : this.#firstTimestamp;
    const delta = timestamp - first;
    const body = bodySize(record, delta, this.#count);
    const added = varIntSize(body) + body;
    if (this.#count > 0 && this.#length + added > maxBytes) return false;
    if (this.#count === 0) this.#firstTimestamp = this.#maxTimestamp = timestamp;
    else if (timestamp > this.#maxTimestamp) this.#maxTimestamp = timestamp;
    this.#ensureCapacity(this.#length + added);
    const buffer = this.#buffer;
    let offset = writeVarInt(buffer, this.#length, body);
    buffer[offset++] = 0; // attributes
    offset = writeVarLong(buffer, offset, delta);
    offset = writeVarInt(buffer, offset, this.#count);
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
    this.#length = offset;
    this.#count++;
    return true;
  }

  /** Writes the header and CRC: the batch as it goes out, with its partition's first sequence (-1 without a producer id). */
  seal(producer: BatchProducer, firstSequence: number): EncodedBatch {
    const buffer = this.#buffer;
    const size = this.#length;
    buffer.writeBigInt64BE(0n, 0); // base offset: the broker assigns it
    buffer.writeInt32BE(size - 12, 8);
    buffer.writeInt32BE(-1, 12); // partition leader epoch: the broker's
    buffer.writeInt8(2, 16);
    const identified = producer.producerId !== undefined && producer.producerId >= 0n;
    buffer.writeInt16BE(producer.transactionalId === undefined ? 0 : IS_TRANSACTIONAL, 21);
    buffer.writeInt32BE(this.#count - 1, 23);
    buffer.writeBigInt64BE(BigInt(this.#firstTimestamp), 27);
    buffer.writeBigInt64BE(BigInt(this.#maxTimestamp), 35);
    buffer.writeBigInt64BE(identified ? (producer.producerId as bigint) : -1n, 43);
    buffer.writeInt16BE(identified ? (producer.producerEpoch ?? 0) : -1, 51);
    buffer.writeInt32BE(identified ? firstSequence : -1, 53);
    buffer.writeInt32BE(this.#count, 57);
    const bytes = buffer.subarray(0, size);
    // The client's crc32c reads a Writer's bytes in place (a Uint8Array it would copy first).
    bytes.writeUInt32BE(crc32c(Writer.create().append(bytes.subarray(CRC_START)).dynamicBuffer), 17);
    return { topic: this.topic, partition: this.partition, bytes };
  }

  #ensureCapacity(needed: number): void {
    if (needed <= this.#buffer.length) return;
    let capacity = this.#buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = Buffer.allocUnsafe(capacity);
    this.#buffer.copy(grown, 0, 0, this.#length);
    this.#buffer = grown;
  }
}

type Bytes = Buffer | string | null | undefined;

function bodySize(record: MessageRecord, timestampDelta: number, offsetDelta: number): number {
  let body = 1 + varLongSize(timestampDelta) + varIntSize(offsetDelta) + bytesFieldSize(record.key) + bytesFieldSize(record.value);
  const headers = record.headers;
  if (headers === undefined || headers === null) return body + 1;
  let headerCount = 0;
  for (const [name, value] of headerEntries(headers)) {
    headerCount++;
    body += bytesFieldSize(name) + bytesFieldSize(value);
  }
  return body + varIntSize(headerCount);
}

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
