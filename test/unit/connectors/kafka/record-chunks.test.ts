import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MessageRecord } from '@platformatic/kafka';
import { BATCH_BYTES_LIMIT, chunksBelowBatchLimit } from '../../../../src/connectors/kafka/record-chunks.ts';

const record = (bytes: number): MessageRecord => ({ topic: 't', partition: 0, value: Buffer.alloc(bytes) });

test('records are chunked below the batch byte limit, in order, a too large record on its own', () => {
  const records = [record(400 * 1024), record(400 * 1024), record(100), record(2 * BATCH_BYTES_LIMIT), record(10)];
  const chunks = [...chunksBelowBatchLimit(records)];
  assert.deepEqual(
    chunks.map((chunk) => chunk.map((entry) => records.indexOf(entry))),
    [[0], [1, 2], [3], [4]],
  );
  assert.deepEqual([...chunksBelowBatchLimit([])], []);
});
