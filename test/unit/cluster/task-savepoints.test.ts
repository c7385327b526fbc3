import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type SavepointControlView, TaskSavepoints } from '../../../src/cluster/task-savepoints.ts';

function control(givenUp: number[]): SavepointControlView {
  return { active: undefined, gaveUp: (id) => givenUp.includes(id), halts: () => false };
}

test("a savepoint given up while the task's part of it is being committed (neither aligning nor halted) fails the task, so it starts again", () => {
  const savepoints = new TaskSavepoints('totals task 3', control([1]), undefined);
  assert.equal(savepoints.givenUp(), undefined, 'nothing pending, nothing aligned, not halted');
  assert.match(savepoints.givenUp([1])?.message ?? '', /totals task 3: savepoint 1 was given up while this task's part of it was being committed/);
  assert.equal(new TaskSavepoints('totals task 3', control([]), undefined).givenUp([1]), undefined, 'a savepoint going on is waited for');
  assert.equal(savepoints.givenUp([2]), undefined, 'only the one given up');
});
