/** Issue 35: the record of an ended task with a two-phase-commit sink (version 3), and what the cluster's end waits for. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeTaskCheckpoint,
  encodeTaskCheckpoint,
  endedForGood,
  TASK_CHECKPOINT_ENDED_VERSION,
  TASK_CHECKPOINT_SINK_COMMIT_VERSION,
  TASK_CHECKPOINT_VERSION,
} from '../../../src/cluster/task-checkpoint.ts';
import { type PendingCheckpoint, sinkCommittedRecord, taskCheckpointRecord } from '../../../src/cluster/task-checkpoint-record.ts';

const owner = { groupId: 'g', generationId: 3, memberId: 'm', groupInstanceId: null };
const pending = (ended: boolean): PendingCheckpoint => ({
  id: 7,
  location: { kind: 'checkpoint', checkpointId: 7, path: '/storage/tasks/sink-0/p1-e0/chk-7' },
  offsets: undefined,
  channels: [{ channel: 0, watermark: Number.POSITIVE_INFINITY, idle: false, ended: true }],
  skips: undefined,
  savepoint: undefined,
  ended,
});
const record = (ended: boolean, committer: boolean) =>
  taskCheckpointRecord({
    stage: 'sink',
    task: 0,
    pending: pending(ended),
    operators: [{ uid: 'files', operator: { path: 'files-0-operator', size: 10, sha256: 'a'.repeat(64) } }],
    offsets: [{ topic: 'x', partition: 0, offset: 10n }],
    watermark: Number.POSITIVE_INFINITY,
    savepoint: undefined,
    restoredFrom: undefined,
    owner,
    committer,
  });

test('an ended task with a two-phase-commit sink: its final record says sinkCommit pending (version 3), then committed', () => {
  const final = decodeTaskCheckpoint(encodeTaskCheckpoint(record(true, true)), 'here');
  assert.equal(final.version, TASK_CHECKPOINT_SINK_COMMIT_VERSION);
  assert.equal(final.ended, true);
  assert.equal(final.sinkCommit, 'pending');
  assert.equal(endedForGood(final), false, 'the cluster waits for its sink’s commit');
  assert.deepEqual(
    final.state?.operators,
    [{ uid: 'files', operator: { path: 'files-0-operator', size: 10, sha256: 'a'.repeat(64) } }],
    'it names the committables like any record',
  );

  const committed = decodeTaskCheckpoint(encodeTaskCheckpoint(sinkCommittedRecord(final, { ...owner, memberId: 'next', generationId: 4 })), 'here');
  assert.equal(committed.version, TASK_CHECKPOINT_SINK_COMMIT_VERSION);
  assert.equal(committed.sinkCommit, 'committed');
  assert.equal(committed.checkpointId, final.checkpointId, 'the same checkpoint');
  assert.deepEqual(committed.state, final.state);
  assert.deepEqual(committed.offsets, final.offsets);
  assert.deepEqual(committed.member, { memberId: 'next', generationId: 4 });
  assert.equal(endedForGood(committed), true);
});

test('records without a two-phase-commit sink keep versions 1 and 2, and still read', () => {
  const ended = decodeTaskCheckpoint(encodeTaskCheckpoint(record(true, false)), 'here');
  assert.equal(ended.version, TASK_CHECKPOINT_ENDED_VERSION);
  assert.equal('sinkCommit' in ended, false);
  assert.equal(endedForGood(ended), true);
  const running = decodeTaskCheckpoint(encodeTaskCheckpoint(record(false, true)), 'here');
  assert.equal('sinkCommit' in running, false, 'only the final record says it');
  assert.equal(endedForGood(running), false);
  const older = decodeTaskCheckpoint(Buffer.from(JSON.stringify({ ...running, version: TASK_CHECKPOINT_VERSION, channels: undefined })), 'here');
  assert.equal(older.version, TASK_CHECKPOINT_VERSION);
  assert.equal(endedForGood(undefined), false);
});
