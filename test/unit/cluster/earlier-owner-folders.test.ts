import assert from 'node:assert/strict';
import { test } from 'node:test';
import { earlierOwnerFolders, ownerOfFolder } from '../../../src/cluster/earlier-owner-folders.ts';

// Issue 32, point 6: the sweep after an owner's commit deleted every other owner folder of the task,
// so a zombie (an older epoch, paused while its commit was in flight) that woke after its task moved
// deleted the live owner's latest checkpoint: the task then failed with STATE_FILE_MISSING for good.
test("an owner sweeps only older owners' folders: never a newer owner's, never another producer id's", () => {
  const folders = ['p7-e3', 'p7-e4', 'p7-e5', 'p7-e9', 'p8-e1', 'chk-1', 'p7-e4x'];
  // The zombie at epoch 5 wakes after owners at epoch 9 took the task: it may delete only 3 and 4.
  assert.deepEqual(earlierOwnerFolders(folders, { producerId: 7, epoch: 5 }), ['p7-e3', 'p7-e4']);
  // The live owner at epoch 9 sweeps every older owner of its producer id.
  assert.deepEqual(earlierOwnerFolders(folders, { producerId: 7n, epoch: 9 }), ['p7-e3', 'p7-e4', 'p7-e5']);
  assert.deepEqual(earlierOwnerFolders(folders, { producerId: 7, epoch: 3 }), []);
  assert.deepEqual(ownerOfFolder('p12345678901234-e7'), { producerId: 12345678901234n, epoch: 7 });
  assert.equal(ownerOfFolder('tasks'), undefined);
});
