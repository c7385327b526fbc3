import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NumericMap, Reader, readRecordsBatch } from '@platformatic/kafka';
import { RecordAccumulator } from '../../../../src/connectors/kafka/record-accumulator.ts';
import { BATCH_HEADER_BYTES } from '../../../../src/connectors/kafka/record-batch-builder.ts';

const record = (partition: number, fill: number) => ({ topic: 'out', partition, value: Buffer.alloc(50, fill) }); // 57 bytes encoded
const RECORD_BYTES = 57;

test('each partition gets one open batch; its bytes are exact, headers included', () => {
  const accumulator = new RecordAccumulator();
  accumulator.append([record(0, 0), record(1, 1), record(0, 2)]);
  assert.equal(accumulator.bytes, 2 * BATCH_HEADER_BYTES + 3 * RECORD_BYTES);
  const batches = accumulator.take(Number.POSITIVE_INFINITY, {});
  assert.deepEqual(
    batches.map((batch) => [batch.partition, batch.bytes.length]),
    [
      [0, BATCH_HEADER_BYTES + 2 * RECORD_BYTES],
      [1, BATCH_HEADER_BYTES + RECORD_BYTES],
    ],
  );
  assert.equal(accumulator.bytes, 0);
});

test('a batch past the limit is closed and the next record opens another; take seals the oldest, one per partition, moving each sequence past its records', () => {
  const limit = BATCH_HEADER_BYTES + 2 * RECORD_BYTES; // two records a batch
  const accumulator = new RecordAccumulator(limit);
  accumulator.append([record(0, 0), record(0, 1), record(0, 2), record(1, 3), record(0, 4)]);
  const sequences = new NumericMap([['out:0', 10]]);
  const producer = { transactionalId: 'tx', producerId: 3n, producerEpoch: 1 };
  const decode = (bytes: Buffer) => readRecordsBatch(Reader.from(bytes));

  const first = accumulator.take(10, producer, sequences);
  assert.equal(first.length, 1, 'at least one batch, however small maxBytes is');
  assert.deepEqual([decode(first[0]?.bytes as Buffer).firstSequence, decode(first[0]?.bytes as Buffer).records.length], [10, 2]);
  assert.equal(sequences.get('out:0'), 12);

  const rest = accumulator.take(Number.POSITIVE_INFINITY, producer, sequences);
  assert.deepEqual(
    rest.map((batch) => [batch.partition, decode(batch.bytes).firstSequence, decode(batch.bytes).records.map((entry) => entry.value?.[0])]),
    [
      [0, 12, [2, 4]],
      [1, 0, [3]],
    ],
    'partition 0 has no second batch in the same request; partition 1 starts at sequence 0',
  );
  assert.deepEqual([sequences.get('out:0'), sequences.get('out:1')], [14, 1]);
  assert.equal(decode(rest[0]?.bytes as Buffer).attributes & 0x10, 0x10, 'transactional');
  assert.deepEqual(accumulator.take(1000, producer, sequences), []);
});

test('two batches of one partition never share a request, and without sequences a batch carries -1', () => {
  const accumulator = new RecordAccumulator(BATCH_HEADER_BYTES + RECORD_BYTES);
  accumulator.append([record(0, 0), record(0, 1), record(1, 2)]);
  const taken = accumulator.take(Number.POSITIVE_INFINITY, {});
  assert.deepEqual(
    taken.map((batch) => batch.partition),
    [0],
    'the second batch of partition 0 waits, and so does every batch after it',
  );
  assert.equal(readRecordsBatch(Reader.from(taken[0]?.bytes as Buffer)).firstSequence, -1);
  assert.deepEqual(
    accumulator.take(Number.POSITIVE_INFINITY, {}).map((batch) => batch.partition),
    [0, 1],
  );
});
