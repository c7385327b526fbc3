import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { type DeltaKeys, type DirtyTracking, IncrementalTracker, type NamedDirtyTracking } from '../../../src/state/incremental-tracker.ts';

/**
 * How many epochs the tracker keeps before it starts again from a full snapshot: checkpoints that
 * fail in a row (none confirmed) pile up epochs, and past 16 the next snapshot is full; epochs kept
 * only for a pin (a disk backend's base beside the chain, whose correction reads the changes after
 * its barrier, and which may take longer than 16 checkpoints) are confirmed ones and do not count.
 */

function trackerWithState(): {
  tracker: IncrementalTracker;
  change: (key: StateKey) => void;
  barrier: (id: number, base: number | undefined) => DeltaKeys | undefined;
} {
  const tracker = new IncrementalTracker(4);
  const table: NamedDirtyTracking = { name: 'count', dirty: undefined };
  const timers: [DirtyTracking, DirtyTracking] = [{ dirty: undefined }, { dirty: undefined }];
  return {
    tracker,
    change: (key) => table.dirty?.mark(0, key),
    barrier: (id, base) => tracker.barrier(id, base, [table], timers),
  };
}

const keysOf = (delta: DeltaKeys | undefined) => [...(delta?.tables.get('count')?.group(0) ?? [])].sort();

test('checkpoints that fail in a row: past 16 unconfirmed epochs the next snapshot is full, and tracking starts again', () => {
  const { tracker, change, barrier } = trackerWithState();
  assert.equal(barrier(1, undefined), undefined);
  tracker.confirm(1);
  for (let id = 2; id <= 17; id++) {
    change(`k${id}`);
    assert.deepEqual(keysOf(barrier(id, 1)).length, id - 1, `checkpoint ${id} adds every change since 1`);
  }
  change('k18');
  assert.equal(barrier(18, 1), undefined, '17 epochs unconfirmed: full');
  change('k19');
  assert.deepEqual(keysOf(barrier(19, 18)), ['k19'], 'tracking starts again at the full snapshot');
});

test('epochs a pin keeps do not count: a base beside the chain written over more than 16 checkpoints leaves them changes, and its changes stay readable', () => {
  const { tracker, change, barrier } = trackerWithState();
  barrier(1, undefined);
  tracker.confirm(1);
  change('before');
  barrier(2, 1);
  tracker.confirm(2);
  tracker.pin(2);
  for (let id = 3; id <= 40; id++) {
    change(`k${id}`);
    assert.deepEqual(keysOf(barrier(id, id - 1)), [`k${id}`], `checkpoint ${id} adds its interval's change to ${id - 1}`);
    tracker.confirm(id);
  }
  assert.equal(keysOf(tracker.changedSince(2)).length, 38, 'every change after the pinned barrier');
  tracker.unpin(2);
  change('k41');
  assert.deepEqual(keysOf(barrier(41, 40)), ['k41']);
  tracker.confirm(41);
});
