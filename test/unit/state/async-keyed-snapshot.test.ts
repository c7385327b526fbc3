import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect, isDeepStrictEqual } from 'node:util';
import { aggregatingState, listState, mapState, reducingState, type StateDescriptor, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { enableTimeToLive, type StateTtlConfig } from '../../../src/core/state/state-ttl-config.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { InternalKeyContext } from '../../../src/state/internal-key-context.ts';
import { InternalTimerService } from '../../../src/state/internal-timer-service.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateSnapshots } from '../../../src/state/keyed-state-snapshot.ts';

/**
 * Asynchronous heap snapshots (issue 34): the snapshot taken at the barrier is written slice by
 * slice while the operator goes on changing the state, and must hold exactly the state at the
 * barrier (copy-on-write per key, Flink's CopyOnWriteStateTable idea).
 */

// Few key groups and many keys: each group holds more keys than one chunk (2048), so a state is
// written over several slices within one key group.
const MAX_PARALLELISM = 2;
const KEYS = 6000;

interface Accumulator {
  sum: number;
  seen: number[];
}

const descriptors = {
  value: valueState<{ n: number; tags: string[] }>('value'),
  list: listState<number>('list'),
  map: mapState<string, { x: number }>('map'),
  reducing: reducingState<number>('reducing', (a, b) => a + b),
  // add mutates the accumulator in place: the snapshot must not see it.
  aggregating: aggregatingState<number, Accumulator, number>('aggregating', {
    createAccumulator: () => ({ sum: 0, seen: [] }),
    add: (value, accumulator) => {
      accumulator.sum += value;
      accumulator.seen.push(value);
      return accumulator;
    },
    getResult: (accumulator) => accumulator.sum,
  }),
};

function backendWith(clock: { now: number } = { now: 0 }): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: keyGroupRange(0, MAX_PARALLELISM - 1),
    operatorName: 'async',
    clock: () => clock.now,
  });
}

/** Everything a snapshot holds, decoded without a backend (no TTL filtering, no side effects), in a canonical order. */
function decode(bytes: Uint8Array): { states: Record<string, [StateKey, unknown][]>; timers: [string, StateKey, number, string][] } {
  const context = new InternalKeyContext('decode', 0);
  const tables = new Map();
  const timers = [new InternalTimerService('processing', context, MAX_PARALLELISM), new InternalTimerService('event', context, MAX_PARALLELISM)] as const;
  restoreKeyedStateSnapshots(
    {
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: keyGroupRange(0, MAX_PARALLELISM - 1),
      operatorName: 'decode',
      keyGroupCount: MAX_PARALLELISM,
      tables,
      timers,
      context,
      clock: () => 0,
    },
    [bytes],
  );
  const states: Record<string, [StateKey, unknown][]> = {};
  for (const [name, table] of [...tables.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const entries: [StateKey, unknown][] = [];
    for (const group of table.groups) if (group !== undefined) for (const entry of group) entries.push(entry);
    states[name] = entries.sort(([a], [b]) => String(a).localeCompare(String(b)));
  }
  const flat: [string, StateKey, number, string][] = [];
  for (const service of timers) {
    for (const group of service.groups) {
      if (group === undefined) continue;
      for (const [key, keyTimers] of group) for (const timer of keyTimers.values()) flat.push([service.domain, key, timer.timestamp, timer.namespace]);
    }
  }
  flat.sort((a, b) => a[0].localeCompare(b[0]) || String(a[1]).localeCompare(String(b[1])) || a[2] - b[2] || a[3].localeCompare(b[3]));
  return { states, timers: flat };
}

type Decoded = ReturnType<typeof decode>;

/** Deep equality of two decoded snapshots that names the first differences (a diff of thousands of entries would take minutes). */
function assertSameState(actual: Decoded, expected: Decoded, what: string): void {
  const differences: string[] = [];
  const names = new Set([...Object.keys(actual.states), ...Object.keys(expected.states)]);
  for (const name of names) {
    const a = new Map(actual.states[name] ?? []);
    const e = new Map(expected.states[name] ?? []);
    for (const key of new Set([...a.keys(), ...e.keys()])) {
      if (!isDeepStrictEqual(a.get(key), e.get(key))) differences.push(`${name}[${String(key)}]: ${inspect(a.get(key))}, expected ${inspect(e.get(key))}`);
    }
  }
  const timers = (decoded: Decoded) => new Set(decoded.timers.map((timer) => JSON.stringify(timer)));
  const [a, e] = [timers(actual), timers(expected)];
  for (const timer of a) if (!e.has(timer)) differences.push(`timer ${timer} should not be there`);
  for (const timer of e) if (!a.has(timer)) differences.push(`timer ${timer} is missing`);
  assert.ok(differences.length === 0, `${what}: ${differences.length} differences, first: ${differences.slice(0, 5).join('; ')}`);
}

/** A small deterministic random generator (tests must not flake). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function fillAll(backend: HeapKeyedStateBackend): void {
  const value = backend.getState(descriptors.value);
  const list = backend.getState(descriptors.list);
  const map = backend.getState(descriptors.map);
  const reducing = backend.getState(descriptors.reducing);
  const aggregating = backend.getState(descriptors.aggregating);
  for (let i = 0; i < KEYS; i++) {
    backend.setCurrentKey(`key-${i}`);
    value.update({ n: i, tags: [`t${i}`] });
    list.addAll([i, i + 1]);
    map.put('a', { x: i });
    reducing.add(i);
    aggregating.add(i);
    backend.registerTimer('event', 1000 + (i % 50));
    if (i % 3 === 0) backend.registerTimer('processing', 2000 + i, `window-${i % 7}`);
  }
}

/** One random change of any kind to any key: in-place mutation of what a read returned, writes, deletes, new keys, timers. */
function mutate(backend: HeapKeyedStateBackend, next: () => number): void {
  const value = backend.getState(descriptors.value);
  const list = backend.getState(descriptors.list);
  const map = backend.getState(descriptors.map);
  const reducing = backend.getState(descriptors.reducing);
  const aggregating = backend.getState(descriptors.aggregating);
  const key = `key-${Math.floor(next() * KEYS * 1.2)}`; // some keys new
  backend.setCurrentKey(key);
  switch (Math.floor(next() * 13)) {
    case 0: {
      const current = value.value();
      if (current !== undefined) {
        current.n += 1000; // in place, then written back: the snapshot keeps the old value
        current.tags.push('changed');
        value.update(current);
      } else value.update({ n: -1, tags: [] });
      break;
    }
    case 1:
      value.clear();
      break;
    case 2:
      list.add(-1); // pushes onto the stored array
      break;
    case 3:
      list.update([7, 7, 7]);
      break;
    case 4: {
      const entry = map.get('a');
      if (entry !== undefined) entry.x = -entry.x; // in place, never written back
      map.put('b', { x: 1 });
      break;
    }
    case 5:
      map.remove('a');
      map.remove('b');
      break;
    case 6:
      reducing.add(1_000_000);
      break;
    case 7:
      aggregating.add(5);
      break;
    case 8:
      aggregating.clear();
      reducing.clear();
      break;
    case 9:
      backend.registerTimer('event', 3000 + Math.floor(next() * 10));
      break;
    case 10:
      backend.deleteTimer('event', 1000 + Math.floor(next() * 50));
      break;
    case 11:
      // A deleted key written again lands at the end of its group's Map.
      value.clear();
      value.update({ n: -2, tags: ['again'] });
      break;
    default:
      backend.pollTimersUpTo('event', 1000 + Math.floor(next() * 5), () => {});
  }
}

test('a snapshot written while every kind of state and the timers change holds exactly the state at the barrier', () => {
  const backend = backendWith();
  fillAll(backend);
  const atBarrier = decode(backend.snapshot());
  const writer = backend.snapshotAsync();
  const next = random(34);
  let slices = 0;
  while (!writer.step(0)) {
    slices++;
    for (let i = 0; i < 200; i++) mutate(backend, next);
  }
  assert.ok(slices > 20, `written over ${slices} slices, records in between`);
  assertSameState(decode(writer.result()), atBarrier, 'the snapshot');
  // The changes themselves were not lost: a snapshot now holds them.
  assert.notDeepEqual(decode(backend.snapshot()), atBarrier);
});

test('the changes made while a snapshot was written are in the state and in the next snapshot', () => {
  // The same changes on two backends, one of them with a snapshot being written meanwhile.
  const plain = backendWith();
  const snapshotting = backendWith();
  fillAll(plain);
  fillAll(snapshotting);
  const writer = snapshotting.snapshotAsync();
  const a = random(7);
  const b = random(7);
  while (!writer.step(0)) {
    for (let i = 0; i < 100; i++) {
      mutate(plain, a);
      mutate(snapshotting, b);
    }
  }
  for (let i = 0; i < 2000; i++) {
    mutate(plain, a);
    mutate(snapshotting, b);
  }
  assertSameState(decode(snapshotting.snapshot()), decode(plain.snapshot()), 'the state after the snapshot');
  const value = snapshotting.getState(descriptors.value);
  const plainValue = plain.getState(descriptors.value);
  for (let i = 0; i < KEYS; i += 97) {
    snapshotting.setCurrentKey(`key-${i}`);
    plain.setCurrentKey(`key-${i}`);
    assert.deepEqual(value.value(), plainValue.value());
  }
});

const withTtl = <D extends StateDescriptor>(descriptor: D, config: Partial<StateTtlConfig> = {}) =>
  enableTimeToLive(descriptor, { ttl: 100, cleanup: { incremental: false }, ...config });

test('TTL state: reads that renew the stamp in place, expiry and cleanup during the snapshot do not reach it; fullSnapshot cleanup filters at the barrier', () => {
  const clock = { now: 1000 };
  const backend = backendWith(clock);
  const renewed = backend.getState(withTtl(valueState<number>('renewed'), { updateType: 'OnReadAndWrite' }));
  const list = backend.getState(withTtl(listState<number>('list'), { updateType: 'OnReadAndWrite' }));
  const map = backend.getState(withTtl(mapState<string, number>('map'), { cleanup: { incremental: { size: 50, everyRecord: true } } }));
  const full = backend.getState(withTtl(valueState<number>('full'), { cleanup: { fullSnapshot: true, incremental: false } }));
  for (let i = 0; i < KEYS; i++) {
    clock.now = i < KEYS / 2 ? 1000 : 1050; // the first half expires at 1100, the second at 1150
    backend.setCurrentKey(`key-${i}`);
    renewed.update(i);
    list.add(i);
    map.put('m', i);
    full.update(i);
  }
  clock.now = 1120; // the first half of `full` is expired at the barrier: left out
  const atBarrier = decode(backend.snapshot());
  assert.equal(atBarrier.states.full?.length, KEYS / 2);
  const writer = backend.snapshotAsync();
  const next = random(3);
  while (!writer.step(0)) {
    clock.now += 1; // time goes on: more expires, reads renew stamps in place, cleanup drops entries
    for (let i = 0; i < 150; i++) {
      backend.setCurrentKey(`key-${Math.floor(next() * KEYS)}`);
      renewed.value();
      list.get();
      map.get('m');
      if (next() < 0.2) full.update(-1);
    }
  }
  assertSameState(decode(writer.result()), atBarrier, 'the TTL snapshot');
});

test('a snapshot restores into a backend that reads and goes on as the original would (round trip)', () => {
  const backend = backendWith();
  fillAll(backend);
  const writer = backend.snapshotAsync();
  const next = random(11);
  while (!writer.step(0)) for (let i = 0; i < 50; i++) mutate(backend, next);
  const bytes = writer.result();
  assert.equal(bytes[4], 4, 'format version 4: entries in chunks');
  const restored = backendWith();
  restored.restore([bytes]);
  assertSameState(decode(restored.snapshot()), decode(bytes), 'restored');
  restored.setCurrentKey('key-42');
  assert.equal(restored.getState(descriptors.aggregating).get(), 42);
  assert.deepEqual(restored.getState(descriptors.list).get(), [42, 43]);
  assert.equal(restored.numTimers('event'), KEYS);
});

test('a snapshot started while the previous one is still written finishes the previous one first; both hold their barrier', () => {
  const backend = backendWith();
  fillAll(backend);
  const first = decode(backend.snapshot());
  const one = backend.snapshotAsync();
  const next = random(5);
  for (let s = 0; s < 5; s++) {
    one.step(0);
    for (let i = 0; i < 100; i++) mutate(backend, next);
  }
  const second = decode(backend.snapshot());
  assert.equal(one.done, true, 'the synchronous snapshot finished the pending one');
  const two = backend.snapshotAsync();
  while (!two.step(0)) for (let i = 0; i < 100; i++) mutate(backend, next);
  assertSameState(decode(one.result()), first, 'the first snapshot');
  assertSameState(decode(two.result()), second, 'the second snapshot');
});

test('a snapshot given up frees the state: no more copies, and no result', () => {
  const backend = backendWith();
  fillAll(backend);
  const writer = backend.snapshotAsync();
  writer.step(0);
  writer.release();
  assert.equal(writer.done, true);
  assert.throws(() => writer.result(), /not written/);
  const next = random(9);
  for (let i = 0; i < 500; i++) mutate(backend, next);
  const after = backend.snapshotAsync();
  after.runToEnd();
  assertSameState(decode(after.result()), decode(backend.snapshot()), 'the snapshot after');
});

test('a state value that cannot be serialized fails the snapshot with the user error, also when it was copied on write', () => {
  const backend = backendWith();
  const value = backend.getState(valueState<unknown>('bad'));
  backend.setCurrentKey('a');
  value.update({ f: () => 1 });
  const writer = backend.snapshotAsync();
  value.value(); // copied on read: the function cannot be cloned, kept as it is
  value.update(2);
  assert.throws(
    () => writer.runToEnd(),
    (error: unknown) => (error as { code?: string }).code === 'STATE_NOT_SERIALIZABLE',
  );
  assert.equal(writer.done, true);
  backend.setCurrentKey('a');
  assert.equal(value.value(), 2);
});

test('a pending snapshot that fails as the next one starts reports its own error; the next one is taken', () => {
  const backend = backendWith();
  const value = backend.getState(valueState<unknown>('v'));
  backend.setCurrentKey('a');
  value.update({ f: () => 1 });
  const failing = backend.snapshotAsync();
  value.update(1);
  const next = backend.snapshotAsync();
  assert.equal(failing.done, true);
  assert.throws(
    () => failing.result(),
    (error: unknown) => (error as { code?: string }).code === 'STATE_NOT_SERIALIZABLE',
  );
  next.runToEnd();
  assert.deepEqual(decode(next.result()).states.v, [['a', 1]]);
});
