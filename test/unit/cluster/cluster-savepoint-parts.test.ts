/** Issue 35 point 2, the parts of a cluster savepoint without a broker: barrier frames, the alignment's offsets and skips, the control records, the metadata. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { checkpointMetadataSchema } from '../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { savepointMetadata } from '../../../src/cluster/cluster-savepoint.ts';
import { decodeFrame, encodeBarrierFrame, encodeRecordsFrame } from '../../../src/cluster/exchange-frames.ts';
import { ENDED_BEFORE, mergeSkips, SavepointAlignment } from '../../../src/cluster/savepoint-alignment.ts';
import { ControlState } from '../../../src/cluster/savepoint-control.ts';
import type { TaskSavepointPart } from '../../../src/cluster/task-checkpoint.ts';
import type { TopicRecord } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const topicRecord = (value: Buffer): TopicRecord => ({ topic: 'x', partition: 3, offset: 7n, timestamp: 0n, key: null, value, headers: [], producerId: 1n });

test('a barrier frame is version 2 and reads back; version 1 frames still read; a newer frame is refused by name', () => {
  assert.deepEqual(decodeFrame(topicRecord(encodeBarrierFrame(5, { savepoint: 3, target: '/sp/savepoint-3-ab', stop: 'drain' }))), {
    kind: 'barrier',
    from: 5,
    savepoint: 3,
    target: '/sp/savepoint-3-ab',
    stop: 'drain',
  });
  assert.equal((decodeFrame(topicRecord(encodeRecordsFrame(1, [1], undefined))) as { kind: string }).kind, 'records');
  assert.throws(
    () => decodeFrame(topicRecord(serialize([3, 'b', 0, 1, { target: 'x', stop: undefined }]))),
    (error: unknown) => error instanceof WeirError && error.code === 'CHECKPOINT_METADATA_TOO_NEW',
  );
});

test('an alignment resumes each partition at its earliest barrier and skips what other channels had before theirs', () => {
  const layout = [
    { topic: 'a', partition: 2, firstChannel: 0, channels: 3 },
    { topic: 'b', partition: 2, firstChannel: 3, channels: 1 },
  ];
  const location = { kind: 'checkpoint' as const, checkpointId: 9, path: '/chk-9' };
  const alignment = new SavepointAlignment({ savepoint: 4, target: '/sp', stop: undefined }, 9, location, layout);
  const mark = { channel: 0, watermark: 100, idle: false };
  assert.equal(alignment.add({ channel: 1, topic: 'a', partition: 2, offset: 10n, mark: undefined }), true);
  assert.equal(alignment.add({ channel: 1, topic: 'a', partition: 2, offset: 11n, mark: undefined }), false, "a channel's second barrier is passed");
  alignment.add({ channel: 0, topic: 'a', partition: 2, offset: 14n, mark });
  alignment.add({ channel: 3, topic: 'b', partition: 2, offset: 4n, mark: undefined });
  assert.equal(alignment.complete, false);
  alignment.add({ channel: 2, topic: 'a', partition: 2, offset: 20n, mark: undefined });
  assert.equal(alignment.complete, true);
  const positions = alignment.positions([]);
  assert.deepEqual(positions, [
    { topic: 'a', partition: 2, offset: 11n },
    { topic: 'b', partition: 2, offset: 5n },
  ]);
  assert.deepEqual(alignment.skips(positions), [
    { topic: 'a', partition: 2, channel: 0, below: 15n },
    { topic: 'a', partition: 2, channel: 2, below: 21n },
  ]);
  assert.deepEqual(alignment.marks(), [mark]);
});

test("a channel that ended counts as its barrier: read during the alignment at its end frame's offset, read before it at none (FLIP-147)", () => {
  const layout = [
    { topic: 'a', partition: 0, firstChannel: 0, channels: 2 },
    { topic: 'b', partition: 0, firstChannel: 2, channels: 1 },
  ];
  const location = { kind: 'checkpoint' as const, checkpointId: 3, path: '/chk-3' };
  const alignment = new SavepointAlignment({ savepoint: 2, target: '/sp', stop: undefined }, 3, location, layout);
  const ended = { channel: 2, watermark: 5, idle: false, ended: true };
  // Channel 2 (all of partition b) ended before the alignment began: b resumes where it was read to.
  alignment.add({ channel: 2, topic: 'b', partition: 0, offset: ENDED_BEFORE, mark: ended });
  alignment.add({ channel: 1, topic: 'a', partition: 0, offset: 30n, mark: undefined });
  assert.equal(alignment.complete, false);
  // Channel 0's end frame came during the alignment, before channel 1's barrier in the partition.
  const endedDuring = { channel: 0, watermark: 7, idle: false, ended: true };
  alignment.add({ channel: 0, topic: 'a', partition: 0, offset: 12n, mark: endedDuring });
  assert.equal(alignment.complete, true);
  const positions = alignment.positions([
    { topic: 'a', partition: 0, offset: 40n },
    { topic: 'b', partition: 0, offset: 9n },
  ]);
  assert.deepEqual(positions, [
    { topic: 'a', partition: 0, offset: 13n },
    { topic: 'b', partition: 0, offset: 9n },
  ]);
  assert.deepEqual(alignment.skips(positions), [{ topic: 'a', partition: 0, channel: 1, below: 31n }], 'the channel ended before bounds no skip');
  assert.deepEqual(
    alignment.marks().sort((x, y) => x.channel - y.channel),
    [endedDuring, ended],
    'ended channels stay ended on restore',
  );
});

test('skips merged: one per channel, the one that reads past more (a restored skip ahead of a new position stays)', () => {
  const skip = (channel: number, below: bigint) => ({ topic: 'a', partition: 0, channel, below });
  assert.deepEqual(mergeSkips([skip(1, 31n), skip(2, 5n)], [skip(2, 21n), skip(3, 9n)]), [skip(1, 31n), skip(2, 21n), skip(3, 9n)]);
});

test('control records: the newest request is active until done or aborted; older ones are given up', () => {
  const state = new ControlState();
  state.add({ version: 1, kind: 'request', id: 1, target: '/sp/1', at: 0 }, 0n);
  assert.deepEqual(state.active, { id: 1, target: '/sp/1', stop: undefined });
  state.add({ version: 1, kind: 'request', id: 2, target: '/sp/2', stop: 'suspend', at: 0 }, 1n);
  assert.equal(state.gaveUp(1), true);
  assert.equal(state.gaveUp(2), false);
  assert.equal(state.stopped, undefined);
  state.add({ version: 1, kind: 'done', id: 2, at: 0 }, 2n);
  assert.equal(state.active, undefined);
  assert.equal(state.stopped, 2);
  state.add({ version: 1, kind: 'request', id: 3, target: '/sp/3', at: 0 }, 3n);
  state.add({ version: 1, kind: 'aborted', id: 3, at: 0 }, 4n);
  assert.equal(state.gaveUp(3), true);
  assert.equal(state.active, undefined);
});

test("a cluster savepoint's metadata names every task as its stage's subtask, in the canonical format", () => {
  const handle = (path: string) => ({ path, size: 1, sha256: 'a'.repeat(64) });
  const part = (operators: TaskSavepointPart['operators'], parallelism: number): TaskSavepointPart => ({
    id: 7,
    target: '/sp',
    jobName: 'job',
    maxParallelism: 4,
    parallelism,
    operators,
  });
  const metadata = savepointMetadata(
    'c',
    7,
    ['src/0', 'src/1', 'keyed/3', 'keyed/0'],
    [
      part([{ uid: 'src', name: 'source', operator: handle('parts/a/src-0.operator') }], 2),
      part([{ uid: 'src', name: 'source', operator: handle('parts/b/src-1.operator') }], 2),
      part(
        [
          { uid: 'sum', name: 'sum', keyed: handle('parts/c/sum-3.keyed') },
          { uid: 'sink', name: 'sink' },
        ],
        4,
      ),
      part(
        [
          { uid: 'sum', name: 'sum' },
          { uid: 'sink', name: 'sink' },
        ],
        4,
      ),
    ],
  );
  assert.equal(checkpointMetadataSchema.safeParse(metadata).success, true);
  assert.deepEqual(
    metadata.operators.map((operator) => [operator.uid, operator.parallelism, operator.subtasks.map((subtask) => subtask.subtaskIndex)]),
    [
      ['src', 2, [0, 1]],
      ['sum', 4, [3]],
      ['sink', 4, []],
    ],
  );
});
