import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MessageRecord, NumericMap, Reader, readRecordsBatch, Writer } from '@platformatic/kafka';
import { encodeProduceRequest } from '../../../../src/connectors/kafka/produce-request.ts';
import { BATCH_BYTES_LIMIT, RecordAccumulator } from '../../../../src/connectors/kafka/record-accumulator.ts';

const decode = (batch: Buffer) => readRecordsBatch(Reader.from(batch));

test('a produce request carries any set of sealed batches, grouped by topic', () => {
  const record = (topic: string, partition: number, value: string): MessageRecord => ({ topic, partition, value: Buffer.from(value) });
  const records = [record('a', 1, 'a1-0'), record('b', 0, 'b0-0'), record('a', 0, 'a0-0'), record('a', 1, 'a1-1'), record('b', 0, 'b0-1')];
  const sequences = new NumericMap([
    ['a:0', 5],
    ['a:1', 9],
    ['b:0', 0],
  ]);
  const accumulator = new RecordAccumulator();
  accumulator.append(records);
  const batches = accumulator.take(BATCH_BYTES_LIMIT, { transactionalId: 'tx-1', producerId: 7n, producerEpoch: 0 }, sequences);
  assert.deepEqual(
    batches.map((batch) => `${batch.topic}:${batch.partition}`),
    ['a:1', 'b:0', 'a:0'],
    'in the order their partitions first had a record',
  );
  // A retry to other leaders regroups the same batches: any subset, in any order of topics, is a request.
  const writer = encodeProduceRequest(-1, 30_000, [batches[1], batches[2], batches[0]] as typeof batches, 'tx-1');
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
    ['b', [[0, 0, ['b0-0', 'b0-1']]]],
    [
      'a',
      [
        [0, 5, ['a0-0']],
        [1, 9, ['a1-0', 'a1-1']],
      ],
    ],
  ]);
  assert.equal(reader.remaining, 1, 'the trailing tagged fields');
  assert.ok(Writer.isWriter(writer));
});
