import assert from 'node:assert/strict';
import { test } from 'node:test';
import { restartCheckpoint } from '../../../src/cluster/restart-checkpoint.ts';
import type { TaskCheckpoint } from '../../../src/cluster/task-checkpoint.ts';

const latest = { stage: 'totals', task: 2, checkpointId: 7 } as TaskCheckpoint;
const base = { stoppedWith: { latest }, refusedIn: 4, assignedIn: 3, generation: 5, unbrokenSince: 2 };

test('a task the group refused starts again from what its run last committed when the member held every generation since its assignment', () => {
  assert.deepEqual(restartCheckpoint(base), { checkpoint: latest });
  assert.deepEqual(restartCheckpoint({ ...base, unbrokenSince: 3 }), { checkpoint: latest });
});

test('else the checkpoint topic is read: a generation missed, out of the group, no newer generation, or the run said nothing', () => {
  assert.equal(restartCheckpoint({ ...base, unbrokenSince: 4 }), undefined, 'a generation after its assignment was missed');
  assert.equal(restartCheckpoint({ ...base, unbrokenSince: undefined }), undefined, 'out of the group meanwhile');
  assert.equal(restartCheckpoint({ ...base, generation: 4 }), undefined, 'no generation newer than the refused commit');
  assert.equal(restartCheckpoint({ ...base, stoppedWith: undefined }), undefined, 'its thread exited');
  assert.equal(restartCheckpoint({ ...base, stoppedWith: { latest: undefined } }), undefined, 'it neither restored nor committed');
});
