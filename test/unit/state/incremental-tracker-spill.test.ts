import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import type { DirtyKeysSpill } from '../../../src/state/dirty-keys.ts';
import { type DirtyTracking, IncrementalTracker, type NamedDirtyTracking } from '../../../src/state/incremental-tracker.ts';
import { LmdbDirtySpill } from '../../../src/state/lmdb-dirty-spill.ts';
import { LmdbStore } from '../../../src/state/lmdb-store.ts';

/** A spill in memory that records what it is asked. */
class RecordingSpill implements DirtyKeysSpill {
  readonly kept = new Map<string, Set<StateKey>>();
  readonly dropped: number[] = [];
  write(epoch: number, structure: number, index: number, keys: Iterable<StateKey>): void {
    const name = `${epoch}/${structure}/${index}`;
    const set = this.kept.get(name) ?? new Set();
    for (const key of keys) set.add(key);
    this.kept.set(name, set);
  }
  read(epoch: number, structure: number, index: number): Iterable<StateKey> {
    return this.kept.get(`${epoch}/${structure}/${index}`) ?? [];
  }
  drop(epoch: number): void {
    this.dropped.push(epoch);
    for (const name of [...this.kept.keys()]) if (name.startsWith(`${epoch}/`)) this.kept.delete(name);
  }
}

test("past its limit the tracker moves changed keys to its spill, reads them back, and drops an epoch's at the barrier after it was confirmed", () => {
  const spill = new RecordingSpill();
  const tracker = new IncrementalTracker(2, { spill, limit: 10 });
  const table: NamedDirtyTracking = { name: 'value', dirty: undefined };
  const timers: [DirtyTracking, DirtyTracking] = [{ dirty: undefined }, { dirty: undefined }];
  assert.equal(tracker.barrier(1, undefined, [table], timers), undefined);
  for (let i = 0; i < 100; i++) table.dirty?.mark(i % 2, `k${i}`);
  assert.ok(tracker.keysInMemory <= 10, `${tracker.keysInMemory} keys in memory`);
  assert.ok(spill.kept.size > 0);
  const delta = tracker.barrier(2, 1, [table], timers);
  const changed = delta?.tables.get('value');
  const all = [...(changed?.group(0) ?? []), ...(changed?.group(1) ?? [])];
  assert.equal(all.length, 100, 'every changed key, from memory and spill');
  tracker.confirm(2);
  assert.deepEqual(spill.dropped, [], 'nothing dropped before the next barrier (a snapshot may still read it)');
  tracker.barrier(3, 2, [table], timers);
  assert.deepEqual(spill.dropped, [0], "the confirmed epoch's keys go at the next barrier");
});

test("the disk backend's spill keeps an epoch's keys in a scratch lmdb environment of its own, read back by key group, deleted whole when dropped and when the store closes", async () => {
  const folder = mkdtempSync(join(tmpdir(), 'weir-spill-'));
  const store = new LmdbStore(folder);
  try {
    const spill = new LmdbDirtySpill(store);
    spill.write(1, 0, 3, ['a', 'b', 7]);
    spill.write(1, 0, 4, ['c']);
    spill.write(2, 0, 3, ['d']);
    assert.deepEqual(spill.read(1, 0, 3).toSorted(), [7, 'a', 'b'].toSorted());
    assert.deepEqual(spill.read(1, 0, 4), ['c']);
    assert.deepEqual(
      readdirSync(store.dir)
        .filter((name) => name.startsWith('spill-'))
        .sort(),
      ['spill-1', 'spill-2'],
    );
    assert.deepEqual(
      store.databaseNames().sort(),
      ['state', 'timers-event', 'timers-processing'],
      'nothing of the spill in the state environment (a base copies it)',
    );
    spill.drop(1);
    assert.deepEqual(spill.read(1, 0, 3), []);
    for (let i = 0; i < 50 && existsSync(join(store.dir, 'spill-1')); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(existsSync(join(store.dir, 'spill-1')), false, "a dropped epoch's environment is deleted");
    assert.deepEqual(spill.read(2, 0, 3), ['d']);
  } finally {
    await store.close();
  }
  assert.deepEqual(readdirSync(folder), [], 'the store closed its scratch environments and deleted its folder');
  rmSync(folder, { recursive: true, force: true });
});
