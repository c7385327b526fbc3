import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRecordsBatch, type MessageRecord, Reader, readRecordsBatches } from '@platformatic/kafka';
import { decodeRecords, readRecordBatches } from '../../../../src/connectors/kafka/record-batch-reader.ts';
import type { TopicRecord } from '../../../../src/connectors/kafka/topic-record.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { encodeRecordBatch } from './encode-record-batch.ts';

const base = 1_700_000_000_000;
const message = (index: number, extra: Partial<MessageRecord> = {}): MessageRecord => ({
  topic: 't',
  partition: 0,
  key: Buffer.from(`k${index}`),
  value: Buffer.from(`{"n":${index}}`),
  timestamp: BigInt(base + index * 10),
  ...extra,
});

/** A batch from Weir's encoder, placed at `firstOffset`. */
function batchAt(firstOffset: bigint, records: MessageRecord[], transactional = false): Buffer {
  const batch = encodeRecordBatch(records, transactional ? { transactionalId: 'tx', producerId: 9n, producerEpoch: 0 } : {}, 0, base);
  batch.writeBigInt64BE(firstOffset, 0);
  return batch;
}

/** The records the client's own reader finds in the same bytes: the reference. */
function reference(bytes: Buffer, fetchOffset = 0n): Omit<TopicRecord, 'topic' | 'partition'>[] {
  return readRecordsBatches(Reader.from(bytes)).flatMap((batch) =>
    batch.records
      .map((record) => ({
        offset: batch.firstOffset + BigInt(record.offsetDelta),
        timestamp: batch.firstTimestamp + record.timestampDelta,
        key: record.key,
        value: record.value,
        headers: record.headers,
        producerId: batch.producerId,
      }))
      .filter((record) => record.offset >= fetchOffset),
  );
}

function decodeAll(bytes: Buffer, fetchOffset = 0n): Omit<TopicRecord, 'topic' | 'partition'>[] {
  const into: TopicRecord[] = [];
  for (const batch of readRecordBatches(bytes)) decodeRecords(batch, 't', 3, fetchOffset, into);
  for (const record of into) assert.deepEqual([record.topic, record.partition], ['t', 3]);
  return into.map(({ topic: _topic, partition: _partition, ...rest }) => rest);
}

test('batches decode to the records the client reads: keys and values, nulls, headers, large timestamp deltas, producer ids', () => {
  const bytes = Buffer.concat([
    batchAt(100n, [
      message(0),
      message(1, { key: undefined, timestamp: BigInt(base + 5_000_000_000) }), // a delta past 2^31
      message(2, { value: null as unknown as Buffer, headers: new Map([[Buffer.from('h'), Buffer.from('v')]]) }),
      message(3, { timestamp: BigInt(base - 70_000), value: Buffer.alloc(1000, 7) }), // a negative delta, a longer varint
    ]),
    batchAt(104n, [message(4), message(5)], true),
  ]);
  const decoded = decodeAll(bytes);
  assert.deepEqual(decoded, reference(bytes));
  assert.deepEqual(
    decoded.map((record) => record.offset),
    [100n, 101n, 102n, 103n, 104n, 105n],
  );
  assert.equal(decoded[1]?.key, null);
  assert.equal(decoded[2]?.value, null);
  assert.equal(decoded[1]?.timestamp, BigInt(base + 5_000_000_000));
  assert.equal(decoded[3]?.timestamp, BigInt(base - 70_000));
  assert.deepEqual([decoded[0]?.producerId, decoded[4]?.producerId], [-1n, 9n]);
});

test('a compressed batch (gzip) decodes like the client reads it', () => {
  const records = Array.from({ length: 50 }, (_, index) => message(index, { headers: new Map([[Buffer.from('i'), Buffer.from(String(index))]]) }));
  const bytes = Buffer.from(createRecordsBatch(records, { compression: 'gzip' }).buffer);
  const [batch] = readRecordBatches(bytes);
  assert.equal((batch?.attributes ?? 0) & 0x07, 1, 'gzip');
  assert.deepEqual(decodeAll(bytes), reference(bytes));
  assert.equal(decodeAll(bytes).length, 50);
});

test('a fetch starting in the middle of a batch leaves the records before it out; a batch cut off at the end is left for the next fetch', () => {
  const whole = batchAt(10n, [message(0), message(1), message(2)]);
  const next = batchAt(13n, [message(3), message(4)]);
  const bytes = Buffer.concat([whole, next.subarray(0, next.length - 5)]);
  assert.equal(readRecordBatches(bytes).length, 1);
  assert.deepEqual(
    decodeAll(bytes, 11n).map((record) => record.offset),
    [11n, 12n],
  );
  assert.deepEqual(decodeAll(Buffer.concat([whole, next]), 12n), reference(Buffer.concat([whole, next]), 12n));
  assert.deepEqual(readRecordBatches(whole.subarray(0, 11)), [], 'less than a batch head');
});

test('a control batch carries its type; a data batch -1', () => {
  const commit = batchAt(5n, [message(0, { key: Buffer.from([0, 0, 0, 1]), value: Buffer.alloc(6) })], true);
  commit.writeInt16BE(commit.readInt16BE(21) | 0x20, 21);
  const abort = batchAt(6n, [message(0, { key: Buffer.from([0, 0, 0, 0]), value: Buffer.alloc(6) })], true);
  abort.writeInt16BE(abort.readInt16BE(21) | 0x20, 21);
  assert.deepEqual(
    readRecordBatches(Buffer.concat([batchAt(4n, [message(0)]), commit, abort])).map((batch) => batch.controlType),
    [-1, 1, 0],
  );
});

test('a record that overruns its batch, or an old batch format, is a clear error', () => {
  const bytes = batchAt(0n, [message(0), message(1)]);
  bytes.writeInt32BE(3, 57); // three records claimed, two there
  assert.throws(
    () => decodeAll(bytes),
    (error: unknown) => error instanceof WeirError && error.code === 'CORRUPT_RECORD_BATCH' && /t\/3 offset 0/.test(error.message),
  );
  const old = batchAt(0n, [message(0)]);
  old.writeInt8(1, 16);
  assert.throws(
    () => readRecordBatches(old),
    (error: unknown) => error instanceof WeirError && error.code === 'UNSUPPORTED_RECORD_BATCH' && /magic 1/.test(error.message),
  );
});
