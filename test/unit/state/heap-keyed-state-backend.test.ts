import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { aggregatingState, listState, mapState, reducingState, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { assignKeyToParallelOperator, assignToKeyGroup, computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';

const MAX_PARALLELISM = 32;

function backendsFor(parallelism: number, maxParallelism = MAX_PARALLELISM): HeapKeyedStateBackend[] {
  return Array.from(
    { length: parallelism },
    (_, index) =>
      new HeapKeyedStateBackend({
        maxParallelism,
        keyGroupRange: computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, index),
        operatorName: 'counts',
      }),
  );
}

function fullBackend(maxParallelism = MAX_PARALLELISM): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ maxParallelism, keyGroupRange: keyGroupRange(0, maxParallelism - 1), operatorName: 'counts' });
}

const isWeirError = (code: string, fault?: string) => (error: unknown) =>
  error instanceof WeirError && error.code === code && (fault === undefined || error.fault === fault);

const count = valueState<number>('count', 0);
const events = listState<string>('events');
const attributes = mapState<string, number>('attributes');
const total = reducingState<number>('total', (a, b) => a + b);
const average = aggregatingState<number, { sum: number; n: number }, number>('average', {
  createAccumulator: () => ({ sum: 0, n: 0 }),
  add: (value, acc) => ({ sum: acc.sum + value, n: acc.n + 1 }),
  getResult: (acc) => acc.sum / acc.n,
});

test('value state is per key, with a default', () => {
  const backend = fullBackend();
  const state = backend.getState(count);
  assert.equal(backend.getState(count), state, 'one object per descriptor');
  assert.equal(backend.getState(valueState<number>('count')), state, 'and per name');
  backend.setCurrentKey('a');
  assert.equal(state.value(), 0);
  state.update(5);
  backend.setCurrentKey('b');
  assert.equal(state.value(), 0);
  state.update(7);
  backend.setCurrentKey('a');
  assert.equal(state.value(), 5);
  state.clear();
  assert.equal(state.value(), 0);
  backend.setCurrentKey('b');
  assert.equal(state.value(), 7);
  state.update(undefined as unknown as number);
  assert.equal(state.value(), 0);
  const plain = backend.getState(valueState<string>('plain'));
  assert.equal(plain.value(), undefined);
});

test('list state', () => {
  const backend = fullBackend();
  const state = backend.getState(events);
  backend.setCurrentKey(1);
  assert.deepEqual(state.get(), []);
  state.add('x');
  state.addAll(['y', 'z']);
  assert.deepEqual(state.get(), ['x', 'y', 'z']);
  backend.setCurrentKey(2);
  const mine = ['p'];
  state.update(mine);
  mine.push('changed after update');
  assert.deepEqual(state.get(), ['p']);
  state.addAll([]);
  state.update([]);
  assert.deepEqual(state.get(), []);
  assert.deepEqual([...backend.keysOf('events')], [1]);
  backend.setCurrentKey(1);
  state.clear();
  assert.deepEqual(state.get(), []);
  state.addAll(['q']);
  assert.deepEqual(state.get(), ['q']);
});

test('map state', () => {
  const backend = fullBackend();
  const state = backend.getState(attributes);
  backend.setCurrentKey(10n);
  assert.ok(state.isEmpty());
  assert.deepEqual([...state.entries()], []);
  state.put('a', 1);
  state.put('b', 2);
  assert.equal(state.get('a'), 1);
  assert.ok(state.has('b') && !state.has('c'));
  assert.deepEqual(
    [...state.entries()],
    [
      ['a', 1],
      ['b', 2],
    ],
  );
  assert.deepEqual([...state.keys()], ['a', 'b']);
  assert.deepEqual([...state.values()], [1, 2]);
  backend.setCurrentKey(11n);
  assert.ok(state.isEmpty());
  assert.equal(state.get('a'), undefined);
  backend.setCurrentKey(10n);
  state.remove('a');
  state.remove('missing');
  assert.deepEqual([...state.keys()], ['b']);
  state.remove('b');
  assert.ok(state.isEmpty());
  assert.deepEqual([...backend.keysOf('attributes')], [], 'an emptied map drops the key');
  state.put('c', 3);
  state.clear();
  assert.ok(state.isEmpty());
});

test('reducing and aggregating state', () => {
  const backend = fullBackend();
  const sum = backend.getState(total);
  const avg = backend.getState(average);
  backend.setCurrentKey(true);
  assert.equal(sum.get(), undefined);
  assert.equal(avg.get(), undefined);
  for (const value of [1, 2, 6]) {
    sum.add(value);
    avg.add(value);
  }
  assert.equal(sum.get(), 9);
  assert.equal(avg.get(), 3);
  backend.setCurrentKey(false);
  sum.add(4);
  assert.equal(sum.get(), 4);
  assert.equal(avg.get(), undefined);
  backend.setCurrentKey(true);
  sum.clear();
  avg.clear();
  assert.equal(sum.get(), undefined);
  assert.equal(avg.get(), undefined);
});

test('a name with two kinds is the user error naming the state', () => {
  const backend = fullBackend();
  backend.getState(valueState<number>('seen'));
  assert.throws(
    () => backend.getState(listState<number>('seen')),
    (e: unknown) => isWeirError('STATE_KIND_MISMATCH', 'user')(e) && /"seen"/.test((e as Error).message) && /"counts"/.test((e as Error).message),
  );
});

test('state without a current key, and keys outside the range', () => {
  const backend = new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 63), operatorName: 'counts' });
  const state = backend.getState(count);
  assert.equal(backend.currentKeyGroup(), -1);
  assert.equal(backend.getCurrentKey(), undefined);
  assert.throws(() => state.update(1), isWeirError('NO_CURRENT_KEY', 'user'));
  assert.throws(() => state.value(), isWeirError('NO_CURRENT_KEY', 'user'));
  assert.throws(() => backend.registerTimer('event', 1), isWeirError('NO_CURRENT_KEY', 'user'));
  let inside: StateKey | undefined;
  let outside: StateKey | undefined;
  for (let i = 0; inside === undefined || outside === undefined; i++) {
    if (assignToKeyGroup(`k${i}`, 128) < 64) inside ??= `k${i}`;
    else outside ??= `k${i}`;
  }
  backend.setCurrentKey(inside);
  assert.equal(backend.currentKeyGroup(), assignToKeyGroup(inside, 128));
  assert.equal(backend.getCurrentKey(), inside);
  assert.throws(
    () => backend.setCurrentKey(outside),
    (e: unknown) => isWeirError('KEY_GROUP_OUT_OF_RANGE', 'internal')(e) && (e as Error).message.includes('0-63'),
  );
  assert.throws(
    () => new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(64, 128), operatorName: 'x' }),
    isWeirError('INVALID_KEY_GROUP_RANGE'),
  );
  assert.throws(
    () => new HeapKeyedStateBackend({ maxParallelism: 0, keyGroupRange: keyGroupRange(0, 0), operatorName: 'x' }),
    isWeirError('INVALID_MAX_PARALLELISM'),
  );
});

const KEYS: StateKey[] = [
  ...Array.from({ length: 200 }, (_, i) => `user-${i}`),
  ...Array.from({ length: 50 }, (_, i) => i * 7),
  ...Array.from({ length: 20 }, (_, i) => BigInt(i) * 1_000_000_000_000n),
  true,
  false,
  'ü€😀',
  '',
];

/** Writes every state and two timers for the keys of KEYS this backend owns, with values derived from each key's index. */
function fill(backend: HeapKeyedStateBackend, keys: readonly StateKey[] = KEYS): void {
  const c = backend.getState(count);
  const e = backend.getState(events);
  const m = backend.getState(attributes);
  const t = backend.getState(total);
  const a = backend.getState(average);
  keys.forEach((key, i) => {
    const keyGroup = assignToKeyGroup(key, backend.maxParallelism);
    if (keyGroup < backend.keyGroupRange.start || keyGroup > backend.keyGroupRange.end) return;
    backend.setCurrentKey(key);
    c.update(i + 1);
    e.addAll([`e${i}`, `f${i}`]);
    if (i % 3 === 0) m.put(`m${i}`, i);
    t.add(i);
    t.add(1);
    a.add(i);
    backend.registerTimer('event', 1000 + i);
    if (i % 2 === 0) backend.registerTimer('processing', 5000 - i);
  });
}

function check(backends: readonly HeapKeyedStateBackend[], keys: readonly StateKey[]): void {
  const where = new Map<StateKey, number>();
  backends.forEach((backend, index) => {
    for (const key of backend.keysOf('count')) {
      assert.ok(!where.has(key), `key ${String(key)} restored twice`);
      where.set(key, index);
    }
  });
  assert.equal(where.size, keys.length, 'every key restored');
  keys.forEach((key, i) => {
    const index = where.get(key)!;
    assert.equal(index, assignKeyToParallelOperator(key, backends[0]!.maxParallelism, backends.length), 'in the subtask that owns its key group');
    const backend = backends[index]!;
    backend.setCurrentKey(key);
    assert.equal(backend.getState(count).value(), i + 1);
    assert.deepEqual(backend.getState(events).get(), [`e${i}`, `f${i}`]);
    assert.deepEqual([...backend.getState(attributes).entries()], i % 3 === 0 ? [[`m${i}`, i]] : []);
    assert.equal(backend.getState(total).get(), i + 1);
    assert.equal(backend.getState(average).get(), i);
  });
  // Every timer fires exactly once, in the backend owning its key, with the key current.
  for (const domain of ['event', 'processing'] as const) {
    const fired = new Map<StateKey, number>();
    for (const backend of backends) {
      let last = -Infinity;
      backend.pollTimersUpTo(domain, Infinity, (key, timestamp) => {
        assert.ok(timestamp >= last, 'in timestamp order');
        last = timestamp;
        assert.equal(backend.getCurrentKey(), key);
        assert.ok(!fired.has(key));
        fired.set(key, timestamp);
      });
    }
    const expected = new Map<StateKey, number>();
    keys.forEach((key, i) => {
      if (domain === 'event') expected.set(key, 1000 + i);
      else if (i % 2 === 0) expected.set(key, 5000 - i);
    });
    assert.deepEqual(fired, expected);
  }
}

test('snapshot and restore round trip', () => {
  const [backend] = backendsFor(1);
  fill(backend!, KEYS);
  const snapshot = backend!.snapshot();
  const restored = backendsFor(1);
  restored[0]!.restore([snapshot]);
  assert.deepEqual(restored[0]!.stateNames().sort(), ['attributes', 'average', 'count', 'events', 'total']);
  const again = backendsFor(1);
  again[0]!.restore([restored[0]!.snapshot()]);
  check(restored, KEYS);
  check(again, KEYS);
  const empty = backendsFor(1)[0]!;
  empty.restore([fullBackend().snapshot()]);
  assert.ok(empty.isEmpty());
});

test('rescale 2 -> 3 and 3 -> 1 keeps every key, value and timer exactly once', () => {
  const two = backendsFor(2);
  for (const backend of two) fill(backend);
  assert.deepEqual(
    two.map((backend) => [...backend.keysOf('count')].length),
    [0, 1].map((index) => KEYS.filter((key) => assignKeyToParallelOperator(key, MAX_PARALLELISM, 2) === index).length),
  );
  const snapshotsOfTwo = two.map((backend) => backend.snapshot());
  const three = backendsFor(3);
  for (const backend of three) backend.restore(snapshotsOfTwo);
  const snapshotsOfThree = three.map((backend) => backend.snapshot());
  check(three, KEYS);
  const one = backendsFor(1);
  one[0]!.restore([...snapshotsOfThree].reverse());
  check(one, KEYS);
});

test('a snapshot restores into a subset of key groups and skips the rest', () => {
  const full = fullBackend();
  fill(full, KEYS);
  const snapshot = full.snapshot();
  const parts = backendsFor(5);
  for (const part of parts) part.restore([snapshot]);
  check(parts, KEYS);
});

test('restore refuses a key group twice, and a used backend', () => {
  const backend = fullBackend();
  fill(backend, ['a']);
  const snapshot = backend.snapshot();
  assert.throws(() => fullBackend().restore([snapshot, snapshot]), isWeirError('DUPLICATE_KEY_GROUP', 'internal'));
  assert.throws(() => backend.restore([snapshot]), isWeirError('RESTORE_INTO_USED_BACKEND', 'internal'));
});

test('restore checks the kind of a state against the one in use', () => {
  const backend = fullBackend();
  fill(backend, ['a']);
  const restored = fullBackend();
  restored.getState(listState<number>('count'));
  assert.throws(
    () => restored.restore([backend.snapshot()]),
    (e: unknown) => isWeirError('STATE_KIND_MISMATCH', 'user')(e) && /"count"/.test((e as Error).message),
  );
  const later = fullBackend();
  later.restore([backend.snapshot()]);
  assert.throws(
    () => later.getState(mapState('events')),
    (e: unknown) => isWeirError('STATE_KIND_MISMATCH', 'user')(e) && /restored/.test((e as Error).message),
  );
});

test('a state the snapshot names is known after a restore into key groups where it has no keys: its kind is checked', () => {
  const backend = fullBackend();
  fill(backend, ['a']);
  const own = assignToKeyGroup('a', MAX_PARALLELISM);
  // A part whose key groups do not hold 'a': the snapshot's states are restored empty, yet known.
  const part = backendsFor(MAX_PARALLELISM).find((candidate) => own < candidate.keyGroupRange.start || own > candidate.keyGroupRange.end);
  assert.ok(part !== undefined);
  part.restore([backend.snapshot()]);
  assert.throws(
    () => part.getState(mapState('events')),
    (e: unknown) => isWeirError('STATE_KIND_MISMATCH', 'user')(e) && /restored/.test((e as Error).message),
  );
});

test('a newer format version is refused with a clear message', () => {
  const backend = fullBackend();
  fill(backend, ['a', 'b']);
  const snapshot = backend.snapshot();
  snapshot[4] = 9;
  snapshot[5] = 0;
  assert.throws(
    () => fullBackend().restore([snapshot]),
    (e: unknown) =>
      isWeirError('STATE_SNAPSHOT_VERSION', 'user')(e) && /state snapshot format version 9 is newer than this Weir supports \(6\)/.test((e as Error).message),
  );
});

test('another maxParallelism is refused with a clear message', () => {
  const backend = fullBackend(128);
  fill(backend, ['a', 'b']);
  assert.throws(
    () => fullBackend(64).restore([backend.snapshot()]),
    (e: unknown) =>
      isWeirError('MAX_PARALLELISM_CHANGED', 'user')(e) &&
      (e as Error).message === 'the checkpoint was taken with maxParallelism 128, the job now has 64: maxParallelism is fixed for the life of a job',
  );
});

test('truncated or altered snapshots are reported as corrupt', () => {
  const backend = fullBackend();
  fill(backend, ['a', 'b', 7, 8n]);
  const snapshot = backend.snapshot();
  for (let length = 0; length < snapshot.length; length++) {
    assert.throws(() => fullBackend().restore([snapshot.subarray(0, length)]), isWeirError('STATE_SNAPSHOT_CORRUPT', 'external'), `truncated to ${length}`);
  }
  for (let at = 0; at < snapshot.length; at++) {
    const altered = snapshot.slice();
    altered[at]! ^= 0x5a;
    assert.throws(
      () => fullBackend().restore([altered]),
      (e: unknown) => isWeirError('STATE_SNAPSHOT_CORRUPT')(e) || (at >= 4 && at < 6 && isWeirError('STATE_SNAPSHOT_VERSION')(e)),
      `byte ${at} altered`,
    );
  }
  assert.throws(
    () => fullBackend().restore([new TextEncoder().encode('not a snapshot at all')]),
    (e: unknown) =>
      isWeirError('STATE_SNAPSHOT_CORRUPT')(e) && /magic bytes/.test((e as Error).message) && /another checkpoint/.test((e as WeirError).hint ?? ''),
  );
});

test('a value that cannot be cloned fails the snapshot naming the state', () => {
  const backend = fullBackend();
  const state = backend.getState(valueState<unknown>('handlers'));
  backend.setCurrentKey('a');
  state.update({ run: () => 1 });
  assert.throws(
    () => backend.snapshot(),
    (e: unknown) =>
      isWeirError('STATE_NOT_SERIALIZABLE', 'user')(e) && /"handlers"/.test((e as Error).message) && /structured-cloneable/.test((e as WeirError).hint ?? ''),
  );
});

test('keysOf lists the keys of one state across key groups', () => {
  const backend = fullBackend();
  fill(backend, KEYS);
  assert.deepEqual(new Set(backend.keysOf('count')), new Set(KEYS));
  assert.deepEqual([...backend.keysOf('no-such-state')], []);
  const attributeKeys = new Set(backend.keysOf('attributes'));
  assert.equal(attributeKeys.size, KEYS.filter((_, i) => i % 3 === 0).length);
});
