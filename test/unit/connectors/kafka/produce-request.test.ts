import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c, type MessageRecord, NumericMap, Reader, readRecordsBatch, Writer } from '@platformatic/kafka';
import { encodeProduceRequest, encodeRecordBatch } from '../../../../src/connectors/kafka/produce-request.ts';

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
  const batch = encodeRecordBatch(records, { transactionalId: 'tx', producerId: 42n, producerEpoch: 3, sequences: new NumericMap() }, 17, base);
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

test('a produce request groups records by topic, then partition, each in its order, with each partition its first sequence', () => {
  const record = (topic: string, partition: number, value: string): MessageRecord => ({ topic, partition, value: Buffer.from(value) });
  const records = [record('a', 1, 'a1-0'), record('b', 0, 'b0-0'), record('a', 0, 'a0-0'), record('a', 1, 'a1-1'), record('b', 0, 'b0-1')];
  const sequences = new NumericMap([
    ['a:0', 5],
    ['a:1', 9],
    ['b:0', 0],
  ]);
  const writer = encodeProduceRequest(-1, 30_000, records, { transactionalId: 'tx-1', producerId: 7n, producerEpoch: 0, sequences });
  const reader = Reader.from(writer.buffer);
  assert.equal(reader.readNullableString(), 'tx-1');
  assert.equal(reader.readInt16(), -1);
  assert.equal(reader.readInt32(), 30_000);
  const seen = reader.readArray((topics) => {
    const name = topics.readString();
    const partitions = topics.readArray((partitions) => {
      const index = partitions.readInt32();
      const batch = decode(partitions.readBytes()); // COMPACT_RECORDS: a length, then the batch
      return [index, batch.firstSequence, batch.records.map((entry) => entry.value?.toString())];
    });
    return [name, partitions];
  });
  assert.deepEqual(seen, [
    [
      'a',
      [
        [0, 5, ['a0-0']],
        [1, 9, ['a1-0', 'a1-1']],
      ],
    ],
    ['b', [[0, 0, ['b0-0', 'b0-1']]]],
  ]);
  assert.equal(reader.remaining, 1, 'the trailing tagged fields');
  assert.ok(Writer.isWriter(writer));
});
