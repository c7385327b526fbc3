import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { CheckpointableKeyedStateBackend } from '../../../src/core/state/keyed-state-backend.ts';
import { mapState, valueState } from '../../../src/core/state/state-descriptors.ts';
import { enableTimeToLive } from '../../../src/core/state/state-ttl-config.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { canonicalChains } from '../../../src/state/lmdb-base-restore.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { assertSameState, decode, fillAll, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';

/**
 * Incremental checkpoints of the disk backend (issue 34), beyond the heap's own cases that
 * disk-keyed-state-backend.test.ts runs against it: the writes lmdb-specific code makes (TTL
 * cleanup, timers fired from the lmdb index) mark their keys, a state first used after tracking
 * began is in the next changes, and chains move between the backends (a heap backend restores a
 * disk backend's chain and the other way round), as a job moves through an incremental checkpoint.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-incremental-'));
const disposers: (() => Promise<void>)[] = [];
after(async () => {
  for (const dispose of disposers) await dispose();
  rmSync(root, { recursive: true, force: true });
});

type Backend = CheckpointableKeyedStateBackend & { notifyCheckpointComplete(checkpointId: number): void };
const range = keyGroupRange(0, MAX_PARALLELISM - 1);
function diskBackend(operatorName: string, clock: { now: number }, settings: { changedKeysInMemory?: number }): Backend {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName,
    clock: () => clock.now,
    dir: mkdtempSync(join(root, 'b-')),
    settings: { writeBufferEntries: 64, ...settings },
  });
  disposers.push(() => backend.dispose());
  return backend;
}

const makers: Record<'heap' | 'disk' | 'disk-spill', (clock: { now: number }) => Backend> = {
  heap: (clock) => new HeapKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: 'heap', clock: () => clock.now }),
  disk: (clock) => diskBackend('disk', clock, {}),
  // The tracker holds at most 20 changed keys in memory: the rest goes to lmdb and is read back.
  'disk-spill': (clock) => diskBackend('disk-spill', clock, { changedKeysInMemory: 20 }),
};

/** An incremental snapshot at barrier `id` on `base`, written without records between steps (awaiting the disk backend's file copy). */
async function take(backend: Backend, id: number, base: number | undefined) {
  const writer = backend.snapshotAsync({ checkpointId: id, base });
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  return { bytes: writer.result(), delta: writer.delta };
}

/** A chain as the canonical reader takes it: a disk backend's base converted (what a restore at another range does). */
async function canonical(chain: Uint8Array[]): Promise<Uint8Array[]> {
  const chains = await canonicalChains([chain], range, { folder: mkdtempSync(join(root, 'c-')), operatorName: 'convert', maxParallelism: MAX_PARALLELISM });
  return chains.flat();
}

/** A backend of `kind` restored from `chain` as a task restores it (a disk backend opens a base's file). */
async function restoredFrom(kind: 'heap' | 'disk', chain: Uint8Array[]): Promise<CheckpointableKeyedStateBackend> {
  const backend = await restoreKeyedStateBackend(
    { stateBackend: kind, maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: kind, reinterpreted: false, dir: mkdtempSync(join(root, 'r-')) },
    [chain],
  );
  disposers.push(async () => await backend.dispose?.());
  return backend;
}

for (const kind of ['heap', 'disk', 'disk-spill'] as const) {
  test(`${kind} backend: values removed by TTL cleanup and timers fired are in the next changes; a chain equals the state at the barrier`, async () => {
    const clock = { now: 0 };
    const backend = makers[kind](clock);
    const ttl = { ttl: 100, cleanup: { incremental: { size: 50 } } };
    const value = backend.getState(enableTimeToLive(valueState<number>('value'), ttl));
    const map = backend.getState(enableTimeToLive(mapState<string, number>('map'), ttl));
    for (let i = 0; i < 500; i++) {
      backend.setCurrentKey(`key-${i}`);
      value.update(i);
      map.put('a', i);
      backend.registerTimer('event', 10 + (i % 20));
    }
    const full = await take(backend, 1, undefined);
    assert.equal(full.delta, undefined);
    backend.notifyCheckpointComplete(1);
    clock.now = 50;
    for (let i = 0; i < 100; i++) {
      backend.setCurrentKey(`key-${i}`);
      value.update(-i); // renewed: lives until 150
    }
    clock.now = 120;
    // Reads run cleanup steps: expired entries of other keys go (written as deletions in the changes).
    for (let i = 0; i < 40; i++) {
      backend.setCurrentKey(`key-${i}`);
      value.value();
      map.get('a');
    }
    const fired = backend.pollTimersUpTo('event', 14, () => {});
    assert.equal(fired, 125);
    const atBarrier = decode(backend.snapshot());
    assert.ok((atBarrier.states.value?.length ?? 0) < 500, 'the cleanup removed values');
    const changes = await take(backend, 2, 1);
    assert.equal(changes.delta?.base, 1);
    assertSameState(decode(await canonical([full.bytes, changes.bytes])), atBarrier, `${kind}: the chain at checkpoint 2`);
    assert.ok(changes.bytes.byteLength < full.bytes.byteLength, `${changes.bytes.byteLength} bytes of changes, ${full.bytes.byteLength} full`);
  });

  test(`${kind} backend: a state first used after tracking began is in the next changes; a key cleared is a deletion`, async () => {
    const clock = { now: 0 };
    const backend = makers[kind](clock);
    const first = backend.getState(valueState<number>('first'));
    for (let i = 0; i < 50; i++) {
      backend.setCurrentKey(i);
      first.update(i);
    }
    const full = await take(backend, 1, undefined);
    backend.notifyCheckpointComplete(1);
    const later = backend.getState(mapState<number, string>('later'));
    backend.setCurrentKey(7);
    later.put(1, 'one');
    first.update(700);
    backend.setCurrentKey(8);
    first.clear();
    const atBarrier = decode(backend.snapshot());
    const changes = await take(backend, 2, 1);
    assert.notEqual(changes.delta, undefined);
    const chain = await canonical([full.bytes, changes.bytes]);
    assertSameState(decode(chain), atBarrier, `${kind}: the chain`);
    assert.deepEqual(decode(chain).states.later, [[7, new Map([[1, 'one']])]]);
  });
}

for (const [from, to] of [
  ['disk', 'heap'],
  ['heap', 'disk'],
  ['disk', 'disk'],
  ['disk-spill', 'disk'],
  ['disk-spill', 'heap'],
] as const) {
  test(`a ${to} backend restores a ${from} backend's chain of incremental snapshots, across aborted checkpoints, to its state at the barrier`, async () => {
    const clock = { now: 0 };
    const backend = makers[from](clock);
    fillAll(backend as unknown as HeapKeyedStateBackend);
    const next = random(7);
    const chains = new Map<number, Uint8Array[]>();
    let completed: number | undefined;
    let deltas = 0;
    for (let id = 1; id <= 6; id++) {
      for (let i = 0; i < 300; i++) mutate(backend as unknown as HeapKeyedStateBackend, next);
      const atBarrier = decode(backend.snapshot());
      const writer = backend.snapshotAsync({ checkpointId: id, base: completed });
      // Changes while the snapshot is written (and while the disk backend's file is copied) do not show in it.
      while (!writer.step(0)) {
        for (let i = 0; i < 50; i++) mutate(backend as unknown as HeapKeyedStateBackend, next);
        await (writer.waiting?.() ?? Promise.resolve());
      }
      const bytes = writer.result();
      if (writer.delta !== undefined) deltas++;
      const chain = writer.delta === undefined ? [bytes] : [...(chains.get(writer.delta.base) as Uint8Array[]), bytes];
      const restored = await restoredFrom(to, chain);
      assertSameState(decode(restored.snapshot()), atBarrier, `checkpoint ${id} (a chain of ${chain.length}) restored into the ${to} backend`);
      if (id === 3) continue; // aborted: the next one adds to 2
      chains.set(id, chain);
      completed = id;
      backend.notifyCheckpointComplete(id);
    }
    assert.equal(deltas, 5, 'every snapshot after the first adds to the last completed one');
  });
}
