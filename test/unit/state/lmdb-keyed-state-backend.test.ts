import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { listState, mapState, reducingState, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { enableTimeToLive } from '../../../src/core/state/state-ttl-config.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { assignToKeyGroup, computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';

/**
 * The disk backend (lmdb) beyond the heap backend's shared cases (disk-keyed-state-backend.test.ts):
 * snapshots move between the two backends at any parallelism, values of structured types round
 * trip, what the disk backend refuses, and its working folder.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-test-'));
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
const MAX_PARALLELISM = 32;

function disk(parallelism = 1, index = 0, writeBufferEntries?: number): LmdbKeyedStateBackend {
  return new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, parallelism, index),
    operatorName: 'sums',
    dir: join(root, `b${folders++}`),
    ...(writeBufferEntries === undefined ? {} : { settings: { writeBufferEntries } }),
  });
}

function heap(parallelism = 1, index = 0): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, parallelism, index),
    operatorName: 'sums',
  });
}

type Backend = HeapKeyedStateBackend | LmdbKeyedStateBackend;

const sum = valueState<{ total: number; at: Date; big: bigint }>('sum');
const seen = listState<number | undefined>('seen');
const tags = mapState<string | number, Map<string, Set<number>>>('tags');
const max = reducingState<number>('max', (a, b) => Math.max(a, b));
const recent = enableTimeToLive(valueState<string>('recent'), { ttl: '1h' });
const KEYS: StateKey[] = [...Array.from({ length: 300 }, (_, i) => `key-${i}`), 7, 8.5, -1, 12n, true, false];

function fill(backend: Backend): void {
  for (const [i, key] of KEYS.entries()) {
    backend.setCurrentKey(key);
    backend.getState(sum).update({ total: i, at: new Date(1_700_000_000_000 + i), big: 2n ** 70n + BigInt(i) });
    backend.getState(seen).addAll([i, undefined, -i - 0.5]); // not -0: msgpackr writes -0 as 0
    if (i % 3 === 0) backend.getState(tags).put(i % 2 === 0 ? 'a' : 1, new Map([['s', new Set([i, i + 1])]]));
    backend.getState(max).add(i);
    if (i % 5 === 0) backend.getState(recent).update(`r${i}`);
    backend.registerTimer('event', 1000 + i);
    if (i % 4 === 0) backend.registerTimer('processing', 5000 - i, `w${i % 3}`);
  }
}

/** What a backend holds, per key, read through the state objects; and its timers, drained. */
function contents(backends: Backend[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const backend of backends) {
    for (const key of KEYS) {
      const range = backend.keyGroupRange;
      const keyGroup = assignToKeyGroup(key, MAX_PARALLELISM);
      if (keyGroup < range.start || keyGroup > range.end) continue;
      backend.setCurrentKey(key);
      out.set(String(key), [
        backend.getState(sum).value(),
        backend.getState(seen).get(),
        [...backend.getState(tags).entries()].sort(),
        backend.getState(max).get(),
        backend.getState(recent).value(),
      ]);
    }
    for (const domain of ['event', 'processing'] as const) {
      backend.pollTimersUpTo(domain, Number.POSITIVE_INFINITY, (key, timestamp, namespace) =>
        out.set(`${domain}:${String(key)}:${timestamp}:${namespace}`, true),
      );
    }
  }
  return out;
}

test('a heap snapshot restores onto the disk backend at another parallelism, and back: the same state, timers and values of structured types', async () => {
  const original = heap();
  fill(original);
  const heapSnapshot = original.snapshot();
  const expected = contents([original]);
  // heap (1 subtask) -> disk (3 subtasks) -> heap (2 subtasks)
  const disks = [0, 1, 2].map((index) => disk(3, index, index === 1 ? 1 : undefined));
  for (const backend of disks) backend.restore([heapSnapshot]);
  const diskSnapshots = disks.map((backend) => backend.snapshot());
  const heaps = [0, 1].map((index) => heap(2, index));
  for (const backend of heaps) backend.restore(diskSnapshots);
  assert.deepEqual(contents(heaps), expected);
  // And the disk backends themselves hold it.
  assert.deepEqual(contents(disks), expected);
  for (const backend of disks) await backend.dispose();
});

test('a disk snapshot restores onto the heap backend byte for byte as the heap would write it, after a disk-to-disk round trip too', async () => {
  const first = disk();
  fill(first);
  const snapshot = first.snapshot();
  const second = disk(2, 1);
  const third = disk(2, 0);
  second.restore([snapshot]);
  third.restore([snapshot]);
  const fromHeap = heap();
  fromHeap.restore([second.snapshot(), third.snapshot()]);
  const reference = heap();
  reference.restore([snapshot]);
  assert.deepEqual(fromHeap.snapshot(), reference.snapshot(), 'the heap writes the same bytes from either');
  for (const backend of [first, second, third]) await backend.dispose();
});

test('values of structured types read back as written (msgpackr with structured clone: Map, Set, Date, BigInt, undefined, nested)', async () => {
  const backend = disk(1, 0, 1);
  const state = backend.getState(valueState<unknown>('any'));
  const values: unknown[] = [
    new Map<unknown, unknown>([
      [1, 'a'],
      ['k', { x: 1n, d: new Date(5) }],
    ]),
    new Set(['a', 2]),
    [undefined, null, 1.5, -3n, 2n ** 80n],
    { nested: { list: [new Map([['a', [1, 2]]])] }, when: new Date(0), none: undefined },
    new Uint8Array([1, 2, 3]),
    'text',
    Number.NaN,
  ];
  values.forEach((value, i) => {
    backend.setCurrentKey(i);
    state.update(value);
  });
  values.forEach((value, i) => {
    backend.setCurrentKey(i);
    assert.ok(isDeepStrictEqual(state.value(), value), `value ${i}`);
  });
  await backend.dispose();
});

test('a value that cannot be written fails the write with the user error naming the state; a good value then takes its place', async () => {
  const backend = disk();
  const state = backend.getState(valueState<unknown>('handlers'));
  backend.setCurrentKey('a');
  state.update({ run: () => 1 });
  assert.throws(
    () => backend.snapshotAsync(),
    (error: unknown) =>
      error instanceof WeirError &&
      error.code === 'STATE_NOT_SERIALIZABLE' &&
      error.fault === 'user' &&
      /"handlers"/.test(error.message) &&
      /structured-cloneable/.test(error.hint ?? ''),
  );
  state.update(2);
  const reference = heap();
  reference.restore([backend.snapshot()]);
  reference.setCurrentKey('a');
  assert.equal(reference.getState(valueState<unknown>('handlers')).value(), 2);
  await backend.dispose();
});

test('map user keys and keys must be primitives on the disk backend: a clear error otherwise', async () => {
  const backend = disk();
  const map = backend.getState(mapState<unknown, number>('m'));
  backend.setCurrentKey('a');
  assert.throws(
    () => map.put({ id: 1 }, 1),
    (error: unknown) => error instanceof WeirError && error.code === 'INVALID_KEY' && /map state "m"/.test(error.message),
  );
  assert.throws(
    () => backend.setCurrentKey('x'.repeat(5000)),
    (error: unknown) => error instanceof WeirError && error.code === 'INVALID_KEY' && /bytes long/.test(error.message),
  );
  await backend.dispose();
});

test('the working folder: what a dead process or an earlier attempt left is deleted when a backend opens, its own files when it is disposed; an unusable stateDir names the setting', async () => {
  const dir = join(root, 'working');
  // A SIGKILLed process (pid 2^22 + 1 is above Linux's pid_max) left its lmdb folder.
  const stale = join(dir, `${2 ** 22 + 1}-1-0`);
  mkdirSync(stale, { recursive: true });
  writeFileSync(join(stale, 'data.mdb'), 'left behind');
  const first = new LmdbKeyedStateBackend({ maxParallelism: 4, keyGroupRange: keyGroupRange(0, 3), operatorName: 'w', dir });
  assert.equal(existsSync(stale), false, "a dead process's folder is deleted");
  first.setCurrentKey('k');
  first.getState(valueState<number>('v')).update(1);
  first.snapshot();
  assert.equal(readdirSync(dir).length, 1, 'one folder per open backend');
  await first.dispose();
  assert.deepEqual(readdirSync(dir), [], 'deleted on dispose');
  // An earlier attempt of the task in this process, its worker terminated before it disposed of its backend.
  const earlier = join(dir, `${process.pid}-99-0`);
  mkdirSync(earlier);
  const again = new LmdbKeyedStateBackend({ maxParallelism: 4, keyGroupRange: keyGroupRange(0, 3), operatorName: 'w', dir });
  assert.equal(existsSync(earlier), false, "an earlier attempt's folder is deleted");
  assert.equal(again.isEmpty(), true, 'a new backend starts empty');
  await again.dispose();

  const file = join(root, 'a-file');
  writeFileSync(file, 'not a folder');
  assert.throws(
    () => new LmdbKeyedStateBackend({ maxParallelism: 4, keyGroupRange: keyGroupRange(0, 3), operatorName: 'w', dir: join(file, 'state') }),
    (error: unknown) => error instanceof WeirError && error.code === 'INVALID_CONFIG' && /^stateDir: /.test(error.message) && /stateDir/.test(error.hint ?? ''),
  );
});

test('a job on the heap backend never loads lmdb', () => {
  const script = `
    import { createRequire } from 'node:module';
    import { StreamTaskStateInitializer } from './src/runtime/tasks/stream-task-state-initializer.ts';
    const state = new StreamTaskStateInitializer({ maxParallelism: 8, parallelism: 1, subtaskIndex: 0, restore: undefined, storage: undefined });
    const backend = await state.keyedStateBackend('uid', 'op');
    backend.setCurrentKey('k');
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('/node_modules/lmdb/'));
    console.log(JSON.stringify(loaded));
  `;
  const cwd = join(import.meta.dirname, '..', '..', '..');
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out.trim()), []);
});
