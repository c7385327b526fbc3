import assert from 'node:assert/strict';
import { pbkdf2 } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { CheckpointableKeyedStateBackend } from '../../../src/core/state/keyed-state-backend.ts';
import { mapState, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import type { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { assignToKeyGroup } from '../../../src/state/key-group-range-assignment.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { isLmdbBase, LMDB_BASE_MAGIC, type LmdbBase, readLmdbBase, writeLmdbBaseHeader } from '../../../src/state/lmdb-base-format.ts';
import type { LmdbBaseSnapshot } from '../../../src/state/lmdb-base-snapshot.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { LmdbStore } from '../../../src/state/lmdb-store.ts';
import { assertSameState, decode, fillAll, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';

/**
 * The disk backend's base (issue 34): an incremental checkpoint's full snapshot is lmdb's own file,
 * copied by lmdb off the task thread from a read transaction that starts after the barrier, then
 * corrected with the values at the barrier of every key written meanwhile. Here libuv's thread pool
 * is kept busy so the copy surely starts after writes of every kind (values, deletions, map entries,
 * timers, a state first used after the barrier) reached lmdb: the restored state is the barrier's,
 * and without the correction it would not be.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-base-'));
const disposers: (() => Promise<void>)[] = [];
after(async () => {
  for (const dispose of disposers) await dispose();
  rmSync(root, { recursive: true, force: true });
});
const range = keyGroupRange(0, MAX_PARALLELISM - 1);

function diskBackend(): LmdbKeyedStateBackend {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'base',
    dir: mkdtempSync(join(root, 'b-')),
    settings: { writeBufferEntries: 64 },
  });
  disposers.push(() => backend.dispose());
  return backend;
}

/** Keeps every thread of libuv's pool busy for a while (one pbkdf2 each): work queued meanwhile (lmdb's copy) starts after. */
async function holdThreadPool(iterations: number): Promise<void> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const busy = Array.from(
    { length: threads },
    () => new Promise<void>((resolve, reject) => pbkdf2('x', 'y', iterations, 32, 'sha256', (error) => (error ? reject(error) : resolve()))),
  );
  await Promise.all(busy);
}

/** A disk backend of the whole range restored from `bytes` (a base: its lmdb file opened). */
async function restoredAtSameRange(bytes: Uint8Array, name: string): Promise<CheckpointableKeyedStateBackend> {
  const restored = await restoreKeyedStateBackend(
    {
      stateBackend: 'disk',
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: range,
      operatorName: name,
      reinterpreted: false,
      dir: mkdtempSync(join(root, 'r-')),
    },
    [[bytes]],
  );
  disposers.push(async () => await restored.dispose?.());
  return restored;
}

/** A disk backend opened on the lmdb file of `base` with its correction left out. */
function uncorrectedBackend(base: LmdbBase): LmdbKeyedStateBackend {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'raw',
    dir: mkdtempSync(join(root, 'u-')),
    base: { ...base, correction: new Uint8Array(0) },
  });
  disposers.push(() => backend.dispose());
  return backend;
}

/**
 * A filled and changed disk backend (random changes of `seed`) whose base (checkpoint 1) is started
 * while libuv's pool is held for `iterations` of pbkdf2: its state at the barrier, the pool's hold.
 */
function baseWhileThreadPoolHeld(seed: number, iterations: number) {
  const backend = diskBackend();
  fillAll(backend as unknown as HeapKeyedStateBackend);
  const next = random(seed);
  for (let i = 0; i < 500; i++) mutate(backend as unknown as HeapKeyedStateBackend, next);
  const atBarrier = decode(backend.snapshot());
  const held = holdThreadPool(iterations);
  const writer = backend.snapshotAsync({ checkpointId: 1, base: undefined });
  return { backend, next, atBarrier, held, writer };
}

test('a base written while writes of every kind reach lmdb before its copy starts restores the state at the barrier, at the same range and at another', async () => {
  const { backend, next, atBarrier, held, writer } = baseWhileThreadPoolHeld(11, 800_000);
  assert.equal(writer.delta, undefined, 'a base is a full snapshot of its chain');
  // After the barrier, before the copy can start: every kind of write, flushed to lmdb.
  for (let i = 0; i < 3000; i++) mutate(backend as unknown as HeapKeyedStateBackend, next);
  const later = backend.getState(valueState<string>('later'));
  const laterMap = backend.getState(mapState<string, number>('later-map'));
  for (let i = 0; i < 100; i++) {
    backend.setCurrentKey(`key-${i}`);
    later.update(`after ${i}`);
    laterMap.put('x', i);
  }

  assert.equal(backend.isEmpty(), false); // flushes the write buffer into lmdb
  assert.equal(writer.step(5), false, 'the copy waits for the thread pool');
  await held;
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  const bytes = writer.result();
  assert.ok(isLmdbBase(bytes));
  const base = readLmdbBase(bytes, 'the test base');
  assert.deepEqual(
    base.states.map((state) => state.name),
    ['value', 'list', 'map', 'reducing', 'aggregating'],
  );
  assert.ok(base.correction.length > 100, 'the copy held writes after the barrier: the correction is not empty');

  const same = await restoredAtSameRange(bytes, 'same');
  assertSameState(decode(same.snapshot()), atBarrier, 'restored at the same range (lmdb file opened)');
  assert.equal(same.numTimers('event'), atBarrier.timers.filter(([domain]) => domain === 'event').length, 'the timers counted again');

  // Without the correction, the file alone holds the writes after the barrier.
  const uncorrected = uncorrectedBackend(base);
  assert.throws(() => assertSameState(decode(uncorrected.snapshot()), atBarrier, 'uncorrected'), /differences/);

  for (const [index, kind] of [
    [0, 'heap'],
    [1, 'disk'],
  ] as const) {
    const half = keyGroupRange(index, index);
    const restored = await restoreKeyedStateBackend(
      {
        stateBackend: kind,
        maxParallelism: MAX_PARALLELISM,
        keyGroupRange: half,
        operatorName: 'half',
        reinterpreted: false,
        dir: mkdtempSync(join(root, 'h-')),
      },
      [[bytes]],
    );
    disposers.push(async () => await restored.dispose?.());
    const got = decode(restored.snapshot());
    const inHalf = (key: StateKey) => assignToKeyGroup(key, MAX_PARALLELISM) === index;
    const want = {
      states: Object.fromEntries(Object.entries(atBarrier.states).map(([name, entries]) => [name, entries.filter(([key]) => inHalf(key))])),
      timers: atBarrier.timers.filter(([, key]) => inHalf(key)),
    };
    assertSameState(got, want, `key group ${index} restored into the ${kind} backend (the base converted)`);
  }
});

test('writes after the barrier wait in the write buffer until the copy has begun: the base holds the barrier exactly, with an empty correction', async () => {
  const { backend, next, atBarrier, held, writer } = baseWhileThreadPoolHeld(12, 400_000);
  // Fewer writes than 8 write buffers (64 entries here) while the copy cannot start: they wait.
  for (let i = 0; i < 300; i++) mutate(backend as unknown as HeapKeyedStateBackend, next);
  await held;
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  const bytes = writer.result();
  const afterWrites = decode(backend.snapshot()); // the live view (a snapshot flushes the buffer: the copy is done)
  const base = readLmdbBase(bytes, 'the test base');
  const restored = await restoredAtSameRange(bytes, 'exact');
  assertSameState(decode(restored.snapshot()), atBarrier, 'restored at the same range');
  // The correction names no key: the same base without it restores the same state.
  const uncorrected = uncorrectedBackend(base);
  assertSameState(decode(uncorrected.snapshot()), atBarrier, 'the copy alone holds the barrier');
  assert.throws(() => assertSameState(afterWrites, atBarrier, 'the writes after the barrier'), /differences/, 'the writes did change the state');
});

test('a base refuses a header it does not know: another magic, a newer version, a damaged header', () => {
  const header = writeLmdbBaseHeader(
    {
      maxParallelism: 4,
      keyGroupRange: keyGroupRange(0, 3),
      states: [{ name: 's', kind: 'value', ttlWrapped: false }],
      structures: [['a', 'b']],
      timerSequences: [3, 4],
    },
    0,
  );
  const base = readLmdbBase(header, 'a header');
  assert.deepEqual(base.structures, [['a', 'b']]);
  assert.deepEqual(base.timerSequences, [3, 4]);
  assert.equal(base.file.length, 0);
  const newer = Uint8Array.from(header);
  newer[LMDB_BASE_MAGIC.length] = 9;
  assert.throws(() => readLmdbBase(newer, 'a newer base'), /format version 9 is newer/);
  const damaged = Uint8Array.from(header);
  damaged[20] = (damaged[20] as number) ^ 0xff;
  assert.throws(() => readLmdbBase(damaged, 'a damaged base'), /is corrupt/);
  const truncated = Uint8Array.from(header.subarray(0, header.length - 3));
  assert.throws(() => readLmdbBase(truncated, 'a truncated base'), /is corrupt/);
});

test('a backend disposed of while lmdb still copies a base waits for the copy before it closes lmdb, and leaves no folder', async () => {
  const dir = mkdtempSync(join(root, 'd-'));
  const backend = new LmdbKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: 'disposed', dir });
  fillAll(backend as unknown as HeapKeyedStateBackend);
  const held = holdThreadPool(800_000);
  const writer = backend.snapshotAsync({ checkpointId: 1, base: undefined }) as LmdbBaseSnapshot;
  let copied = false;
  void writer.copied.then(() => {
    copied = true;
  });
  assert.equal(writer.step(1), false, 'the copy has not run yet');
  await backend.dispose(); // gives the snapshot up; the copy, queued behind the held pool, still runs on lmdb's environment
  assert.equal(copied, true, 'lmdb closed only after its copy ended');
  await held;
  assert.equal(writer.done, true);
  assert.throws(() => writer.assertComplete(), /not written/);
  assert.deepEqual(readdirSync(dir), []);
});

test("a base taken while changed keys were spilled restores without the spill's databases; an aborted checkpoint's base is given up", async () => {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'spilled',
    dir: mkdtempSync(join(root, 's-')),
    settings: { writeBufferEntries: 64, changedKeysInMemory: 20 },
  });
  disposers.push(() => backend.dispose());
  fillAll(backend as unknown as HeapKeyedStateBackend);
  const take = async (id: number) => {
    const writer = backend.snapshotAsync({ checkpointId: id, base: undefined });
    while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
    return writer.result();
  };
  await take(1);
  const next = random(5);
  for (let i = 0; i < 500; i++) mutate(backend as unknown as HeapKeyedStateBackend, next); // past 20 changed keys: spilled
  const atBarrier = decode(backend.snapshot());
  const bytes = await take(2);
  const base = readLmdbBase(bytes, 'a base with spilled keys');
  const folder = mkdtempSync(join(root, 'n-'));
  const plain = new LmdbStore(folder, {}, { file: base.file, structures: base.structures });
  assert.deepEqual(plain.databaseNames().sort(), ['state', 'timers-event', 'timers-processing']);
  await plain.close();
  const restored = await restoreKeyedStateBackend(
    {
      stateBackend: 'disk',
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: range,
      operatorName: 'spilled',
      reinterpreted: false,
      dir: mkdtempSync(join(root, 'r-')),
    },
    [[bytes]],
  );
  disposers.push(async () => await restored.dispose?.());
  assertSameState(decode(restored.snapshot()), atBarrier, 'restored from a base with spilled keys');

  const held = holdThreadPool(800_000);
  const aborted = backend.snapshotAsync({ checkpointId: 3, base: undefined });
  assert.equal(aborted.step(1), false);
  backend.notifyCheckpointAborted(3);
  assert.equal(aborted.done, true, 'given up at once');
  await held;
  assert.throws(() => aborted.assertComplete(), /not written/);
});
