import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHECKPOINT_HISTORY_SIZE, type CheckpointStats, CheckpointStatsTracker } from '../../../src/checkpoint/checkpoint-stats-tracker.ts';

test('a row goes from pending to completed, with its duration, the bytes summed and the longest alignment', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'checkpoint', 1_000);
  assert.deepEqual(tracker.history(), [
    { checkpointId: 1, kind: 'checkpoint', status: 'pending', triggeredAt: 1_000, durationMs: undefined, bytes: 0, alignmentMs: 0 },
  ]);
  tracker.reportAcknowledged(1, 100, 5);
  tracker.reportAcknowledged(1, 50, 20);
  tracker.reportAcknowledged(1, 7, 3);
  tracker.reportCompleted(1, 1_250);
  assert.deepEqual(tracker.history(), [
    { checkpointId: 1, kind: 'checkpoint', status: 'completed', triggeredAt: 1_000, durationMs: 250, bytes: 157, alignmentMs: 20 },
  ]);
});

test('an aborted row keeps the failure, and its reason in words', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'savepoint', 0);
  tracker.reportPending(2, 'checkpoint', 10);
  tracker.reportFailed(1, { reason: 'CHECKPOINT_EXPIRED', message: 'no acknowledgement from sink (1/1)' }, 40);
  tracker.reportFailed(2, { reason: 'CHECKPOINT_COORDINATOR_SHUTDOWN', message: '' }, 15);
  const [savepoint, checkpoint] = tracker.history();
  assert.equal(savepoint?.status, 'aborted');
  assert.equal(savepoint.kind, 'savepoint');
  assert.equal(savepoint.durationMs, 40);
  assert.equal(savepoint.reason, 'no acknowledgement from sink (1/1)');
  assert.deepEqual(savepoint.failure, { reason: 'CHECKPOINT_EXPIRED', message: 'no acknowledgement from sink (1/1)' });
  assert.equal(checkpoint?.reason, 'the job stopped', 'an empty message falls back to the reason in words');
  assert.equal(checkpoint.durationMs, 5);
});

test('reports of an unknown checkpoint change nothing', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'checkpoint', 0);
  tracker.reportAcknowledged(9, 100, 100);
  tracker.reportCompleted(9, 10);
  tracker.reportFailed(9, { reason: 'CHECKPOINT_DECLINED', message: 'x' }, 10);
  assert.deepEqual(
    tracker.history().map((row) => [row.checkpointId, row.status, row.bytes]),
    [[1, 'pending', 0]],
  );
});

test(`the history keeps the latest ${CHECKPOINT_HISTORY_SIZE} rows, oldest first`, () => {
  const tracker = new CheckpointStatsTracker();
  for (let id = 1; id <= CHECKPOINT_HISTORY_SIZE + 5; id++) tracker.reportPending(id, 'checkpoint', id);
  const history = tracker.history();
  assert.equal(history.length, CHECKPOINT_HISTORY_SIZE);
  assert.equal(history[0]?.checkpointId, 6);
  assert.equal(history.at(-1)?.checkpointId, CHECKPOINT_HISTORY_SIZE + 5);
  tracker.reportCompleted(3, 100);
  assert.ok(
    tracker.history().every((row) => row.status === 'pending'),
    'a row dropped from the history is not reported',
  );
});

test('history() hands out copies', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'checkpoint', 0);
  const [row] = tracker.history();
  assert.ok(row !== undefined);
  row.status = 'completed';
  row.bytes = 1;
  assert.equal(tracker.history()[0]?.status, 'pending');
  assert.equal(tracker.history()[0]?.bytes, 0);
});

test('the listener hears of each completion and failure with the row', () => {
  const completed: CheckpointStats[] = [];
  const failed: CheckpointStats[] = [];
  const tracker = new CheckpointStatsTracker({ onCompleted: (stats) => completed.push({ ...stats }), onFailed: (stats) => failed.push({ ...stats }) });
  tracker.reportPending(1, 'checkpoint', 0);
  tracker.reportPending(2, 'checkpoint', 0);
  tracker.reportAcknowledged(1, 10, 1);
  tracker.reportCompleted(1, 30);
  tracker.reportFailed(2, { reason: 'CHECKPOINT_SUBSUMED', message: 'subsumed by checkpoint 1' }, 31);
  assert.deepEqual(
    completed.map((row) => [row.checkpointId, row.status, row.bytes, row.durationMs]),
    [[1, 'completed', 10, 30]],
  );
  assert.deepEqual(
    failed.map((row) => [row.checkpointId, row.status, row.reason]),
    [[2, 'aborted', 'subsumed by checkpoint 1']],
  );
});

test('a tracker without a listener works the same', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'checkpoint', 0);
  tracker.reportCompleted(1, 1);
  tracker.reportPending(2, 'checkpoint', 2);
  tracker.reportFailed(2, { reason: 'JOB_FAILOVER', message: '' }, 3);
  assert.deepEqual(
    tracker.history().map((row) => row.status),
    ['completed', 'aborted'],
  );
});

test('the counts cover the life of the job, past the history: 149 completed, 1 failed, 1 in progress, restores', () => {
  const tracker = new CheckpointStatsTracker();
  for (let id = 1; id <= 150; id++) {
    tracker.reportPending(id, 'checkpoint', id);
    if (id === 75) tracker.reportFailed(id, { reason: 'CHECKPOINT_EXPIRED', message: '' }, id + 1);
    else tracker.reportCompleted(id, id + 1);
  }
  tracker.reportPending(151, 'savepoint', 151);
  tracker.reportRestored();
  tracker.reportRestored();
  assert.equal(tracker.history().length, CHECKPOINT_HISTORY_SIZE);
  assert.deepEqual(tracker.counts(), { total: 151, completed: 149, failed: 1, inProgress: 1, restored: 2 });
  // A checkpoint whose row left the history while it was pending still counts when it ends.
  for (let id = 152; id <= 152 + CHECKPOINT_HISTORY_SIZE; id++) tracker.reportPending(id, 'checkpoint', id);
  tracker.reportCompleted(151, 500);
  assert.equal(tracker.counts().completed, 150);
  // Reported twice (or never pending): counted once.
  tracker.reportCompleted(151, 501);
  tracker.reportFailed(151, { reason: 'CHECKPOINT_EXPIRED', message: '' }, 502);
  assert.deepEqual(tracker.counts(), { total: 252, completed: 150, failed: 1, inProgress: CHECKPOINT_HISTORY_SIZE + 1, restored: 2 });
});
