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

test('a new alignment counts the channels that ended before it (FLIP-147); an end frame during it counts as its channel’s barrier', () => {
  const savepoints = new TaskSavepoints('totals task 0', control([]), undefined);
  const layout = [{ topic: 'x', partition: 0, firstChannel: 0, channels: 3 }];
  const barrier = { savepoint: 1, target: '/sp', stop: undefined };
  const start = () => ({ id: 5, location: { kind: 'checkpoint' as const, checkpointId: 5, path: '/chk-5' } });
  assert.equal(savepoints.onEnd({ channel: 1, topic: 'x', partition: 0, offset: 3n, mark: undefined }), undefined, 'no alignment: an end is only an end');
  const ended = [{ channel: 0, watermark: 10, idle: false, ended: true }];
  const first = savepoints.onBarrier(barrier, { channel: 2, topic: 'x', partition: 0, offset: 20n, mark: undefined }, layout, ended, start);
  assert.ok(first !== undefined && !(first instanceof Error));
  assert.deepEqual(
    first.added.map((at) => [at.channel, at.offset]),
    [
      [0, -1n],
      [2, 20n],
    ],
  );
  assert.equal(first.blocks, true, 'the barrier’s channel waits for the others');
  assert.equal(first.alignment.complete, false);
  const last = savepoints.onEnd({ channel: 1, topic: 'x', partition: 0, offset: 12n, mark: { channel: 1, watermark: 11, idle: false, ended: true } });
  assert.ok(last !== undefined);
  assert.equal(last.blocks, false);
  assert.equal(last.alignment.complete, true);
  assert.equal(savepoints.aligning, false);
  assert.deepEqual(last.alignment.positions([]), [{ topic: 'x', partition: 0, offset: 13n }]);
  assert.deepEqual(last.alignment.skips([{ topic: 'x', partition: 0, offset: 13n }]), [{ topic: 'x', partition: 0, channel: 2, below: 21n }]);
});
