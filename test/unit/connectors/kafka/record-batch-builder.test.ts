import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c, type MessageRecord, Reader, readRecordsBatch } from '@platformatic/kafka';
import { RecordBatchBuilder } from '../../../../src/connectors/kafka/record-batch-builder.ts';
import { encodeRecordBatch } from './encode-record-batch.ts';

const decode = (batch: Buffer) => readRecordsBatch(Reader.from(batch));

test('a record batch decodes to its records: keys, null keys and values, headers, timestamp deltas of any size, in order', () => {
  const base = 1_700_000_000_000;
  const records: MessageRecord[] = [
    { topic: 't', partition: 0, key: Buffer.from('k1'), value: Buffer.from('{"a":1}'), timestamp: BigInt(base) },
    { topic: 't', partition: 0, value: Buffer.from('no key'), timestamp: BigInt(base + 5_000_000_000) }, // a delta past 2^31
    {
      topic: 't',
      partition: 0,
      key: Buffer.from('k3'),
      value: Buffer.alloc(300, 7),
      timestamp: BigInt(base - 1),
      headers: new Map([[Buffer.from('h'), Buffer.from('v')]]),
    },
    {
      topic: 't',
      partition: 0,
      key: Buffer.from('ключ'),
      value: null as unknown as Buffer,
      timestamp: BigInt(base),
      headers: { name: Buffer.from('ü'), empty: Buffer.alloc(0) } as unknown as Map<Buffer, Buffer>,
    }, // the client's object form
  ];
  const batch = encodeRecordBatch(records, { transactionalId: 'tx', producerId: 42n, producerEpoch: 3 }, 17, base);
  const decoded = decode(batch);
  assert.equal(decoded.magic, 2);
  assert.equal(decoded.length, batch.length - 12);
  assert.equal(decoded.crc, crc32c(batch.subarray(21)), 'the CRC-32C of attributes to end');
  assert.equal(decoded.attributes, 1 << 4, 'transactional');
  assert.equal(decoded.producerId, 42n);
  assert.equal(decoded.producerEpoch, 3);
  assert.equal(decoded.firstSequence, 17);
  assert.equal(decoded.lastOffsetDelta, 3);
  assert.equal(decoded.firstTimestamp, BigInt(base));
  assert.equal(decoded.maxTimestamp, BigInt(base + 5_000_000_000));
  assert.deepEqual(
    decoded.records.map((record) => [record.offsetDelta, Number(record.timestampDelta), record.key?.toString(), record.value?.length ?? null]),
    [
      [0, 0, 'k1', 7],
      [1, 5_000_000_000, undefined, 6],
      [2, -1, 'k3', 300],
      [3, 0, 'ключ', null],
    ],
  );
  assert.equal(decoded.records[1]?.key, null, 'a record without a key has a null key');
  assert.deepEqual(
    decoded.records[2]?.headers.map(([name, value]) => [name?.toString(), value?.toString()]),
    [['h', 'v']],
  );
  assert.deepEqual(
    decoded.records[3]?.headers.map(([name, value]) => [name?.toString(), value?.toString()]),
    [
      ['name', 'ü'],
      ['empty', ''],
    ],
  );
});

test('without a producer id the batch carries none, and records without a timestamp get now', () => {
  const batch = encodeRecordBatch([{ topic: 't', partition: 1, value: Buffer.from('x') }], {}, -1, 1234);
  const decoded = decode(batch);
  assert.equal(decoded.attributes, 0);
  assert.equal(decoded.producerId, -1n);
  assert.equal(decoded.producerEpoch, -1);
  assert.equal(decoded.firstSequence, -1);
  assert.equal(decoded.firstTimestamp, 1234n);
});

test('a builder appends records as they come, keeps below its limit, and seals with the first sequence given', () => {
  const builder = new RecordBatchBuilder('t', 2, 64); // a small first buffer: it grows
  assert.equal(builder.bytes, 61, 'the header alone');
  for (let i = 0; i < 100; i++)
    assert.equal(builder.append({ topic: 't', partition: 2, key: Buffer.from(`k${i}`), value: Buffer.from(`ü${i}`) }, 1000 + i), true);
  const size = builder.bytes;
  assert.equal(builder.append({ topic: 't', partition: 2, value: Buffer.alloc(100) }, 0, size + 50), false, 'past maxBytes: refused');
  assert.equal(builder.bytes, size, 'and left as it was');
  const batch = builder.seal({ producerId: 1n, producerEpoch: 0 }, 40);
  assert.equal(batch.bytes.length, size);
  const decoded = decode(batch.bytes);
  assert.equal(decoded.firstSequence, 40);
  assert.equal(decoded.attributes, 0, 'idempotent, not transactional');
  assert.equal(decoded.maxTimestamp, 1099n);
  assert.equal(decoded.records.length, 100);
  assert.deepEqual(
    [decoded.records[99]?.key?.toString(), decoded.records[99]?.value?.toString(), Number(decoded.records[99]?.timestampDelta)],
    ['k99', 'ü99', 99],
  );
  const single = new RecordBatchBuilder('t', 0);
  assert.equal(single.append({ topic: 't', partition: 0, value: Buffer.alloc(5000) }, 0, 100), true, 'a record larger than maxBytes is a batch of its own');
});
