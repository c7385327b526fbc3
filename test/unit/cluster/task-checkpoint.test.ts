import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeTaskCheckpoint, encodeTaskCheckpoint, latestTaskCheckpoints, offsetsOf, type TaskCheckpoint } from '../../../src/cluster/task-checkpoint.ts';
import type { TopicRecord } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const checkpoint = (task: number, checkpointId: number, offset: string): TaskCheckpoint => ({
  version: 1,
  stage: 'sum',
  task,
  checkpointId,
  offsets: [{ topic: 'in', partition: task, offset }],
  state: null,
  watermark: null,
  member: { memberId: 'm', generationId: 3 },
  completedAt: 1,
});
const record = (partition: number, offset: bigint, key: string, value: Buffer | null): TopicRecord => ({
  topic: 'chk',
  partition,
  offset,
  timestamp: 0n,
  key: Buffer.from(key),
  value,
  headers: [],
  producerId: 1n,
});

test('a task checkpoint is versioned JSON: offsets are 64-bit, a newer version and a damaged record are refused by name', () => {
  const big = checkpoint(0, 2, '9007199254740993');
  assert.deepEqual(decodeTaskCheckpoint(encodeTaskCheckpoint(big), 'here'), big);
  assert.equal(offsetsOf(big)[0]?.offset, 9007199254740993n);
  assert.throws(
    () => decodeTaskCheckpoint(Buffer.from(JSON.stringify({ ...big, version: 4 })), 'chk/0 offset 7'),
    (error: unknown) =>
      error instanceof WeirError &&
      error.code === 'CHECKPOINT_METADATA_TOO_NEW' &&
      /at chk\/0 offset 7 is of version 4; this Weir reads versions 1 to 3/.test(error.message),
  );
  assert.throws(
    () => decodeTaskCheckpoint(Buffer.from('{'), 'chk/0 offset 8'),
    (error: unknown) => error instanceof WeirError && error.code === 'CHECKPOINT_METADATA_CORRUPT' && /does not read: not JSON/.test(error.message),
  );
});

test('the latest checkpoint of each task is its last record; a tombstone drops it', () => {
  const records = [
    record(0, 5n, 'sum/0', encodeTaskCheckpoint(checkpoint(0, 2, '20'))),
    record(0, 1n, 'sum/0', encodeTaskCheckpoint(checkpoint(0, 1, '10'))),
    record(1, 0n, 'sum/1', encodeTaskCheckpoint(checkpoint(1, 1, '3'))),
    record(1, 1n, 'sum/1', null),
  ];
  const latest = latestTaskCheckpoints(records, 'chk');
  assert.equal(latest.get('sum/0')?.checkpointId, 2);
  assert.equal(latest.has('sum/1'), false);
});

test("a task behind exchanges keeps its channels' last watermark frames in its checkpoint; a record without them still reads", () => {
  const withChannels: TaskCheckpoint = {
    ...checkpoint(1, 4, '10'),
    channels: [
      { channel: 0, watermark: 1_700_000_000_000, idle: false },
      { channel: 1, watermark: null, idle: true },
    ],
  };
  assert.deepEqual(decodeTaskCheckpoint(encodeTaskCheckpoint(withChannels), 'here').channels, withChannels.channels);
  assert.equal(decodeTaskCheckpoint(encodeTaskCheckpoint(checkpoint(1, 4, '10')), 'here').channels, undefined);
});
