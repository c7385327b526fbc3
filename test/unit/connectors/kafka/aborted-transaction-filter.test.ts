import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BATCH_IS_CONTROL,
  BATCH_IS_TRANSACTIONAL,
  type BatchInfo,
  CONTROL_ABORT,
  CONTROL_COMMIT,
  filterAbortedTransactions,
} from '../../../../src/connectors/kafka/aborted-transaction-filter.ts';

type Batch = BatchInfo & { values: string[] };

function dataBatch(firstOffset: number, producerId: number, values: string[], transactional = true): Batch {
  return {
    firstOffset: BigInt(firstOffset),
    attributes: transactional ? BATCH_IS_TRANSACTIONAL : 0,
    lastOffsetDelta: values.length - 1,
    producerId: BigInt(producerId),
    controlType: -1,
    values,
  };
}

function marker(offset: number, producerId: number, type: number): Batch {
  return { ...dataBatch(offset, producerId, ['']), attributes: BATCH_IS_TRANSACTIONAL | BATCH_IS_CONTROL, controlType: type, values: [] };
}

const values = (result: ReturnType<typeof filterAbortedTransactions<Batch>>) => result.batches.flatMap((entry) => entry.values);

test('drops the aborted transaction and every control batch, keeps the committed one', () => {
  const batches = [dataBatch(0, 7, ['a', 'b']), marker(2, 7, CONTROL_COMMIT), dataBatch(3, 7, ['x']), marker(4, 7, CONTROL_ABORT)];
  const result = filterAbortedTransactions(batches, [{ producerId: 7n, firstOffset: 3n }], 0n);
  assert.deepEqual(values(result), ['a', 'b']);
  assert.equal(result.nextOffset, 5n);
});

test('drops aborted records whose ABORT marker is not in this fetch response (it comes in a later one)', () => {
  // The broker lists the aborted transaction as soon as its range overlaps the fetch, marker or not.
  const first = filterAbortedTransactions([dataBatch(0, 9, ['gone-1']), dataBatch(1, 9, ['gone-2'])], [{ producerId: 9n, firstOffset: 0n }], 0n);
  assert.deepEqual(values(first), []);
  assert.equal(first.nextOffset, 2n);
  const second = filterAbortedTransactions([marker(2, 9, CONTROL_ABORT), dataBatch(3, 9, ['kept'])], [{ producerId: 9n, firstOffset: 0n }], 2n);
  assert.deepEqual(values(second), ['kept']);
});

test('interleaved producers: only the aborting producer loses its records, and only until its marker', () => {
  const batches = [
    dataBatch(0, 1, ['p1-aborted']),
    dataBatch(1, 2, ['p2-committed']),
    marker(2, 1, CONTROL_ABORT),
    dataBatch(3, 1, ['p1-next']),
    marker(4, 2, CONTROL_COMMIT),
  ];
  const result = filterAbortedTransactions(batches, [{ producerId: 1n, firstOffset: 0n }], 0n);
  assert.deepEqual(values(result), ['p2-committed', 'p1-next']);
});

test('non-transactional batches of the same producer id are never dropped', () => {
  const result = filterAbortedTransactions([dataBatch(0, 5, ['plain'], false)], [{ producerId: 5n, firstOffset: 0n }], 0n);
  assert.deepEqual(values(result), ['plain']);
});

test('a batch returned whole though the fetch starts in its middle is kept (the decoder leaves its first records out); one wholly before is not', () => {
  const result = filterAbortedTransactions([dataBatch(7, 3, ['x', 'y', 'z'], false), dataBatch(10, 3, ['a', 'b', 'c'], false)], null, 11n);
  assert.deepEqual(values(result), ['a', 'b', 'c']);
  assert.equal(result.nextOffset, 13n);
});
