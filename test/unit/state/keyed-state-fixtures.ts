import assert from 'node:assert/strict';
import { inspect, isDeepStrictEqual } from 'node:util';
import { aggregatingState, listState, mapState, reducingState, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { InternalKeyContext } from '../../../src/state/internal-key-context.ts';
import { InternalTimerService } from '../../../src/state/internal-timer-service.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateSnapshots } from '../../../src/state/keyed-state-snapshot.ts';

/**
 * What the keyed snapshot tests share (async-keyed-snapshot, incremental-keyed-snapshot): a backend
 * with every kind of state, random changes of every kind, and a decoder that compares snapshots.
 */

// Few key groups and many keys: each group holds more keys than one chunk (2048), so a state is
// written over several slices within one key group.
export const MAX_PARALLELISM = 2;
export const KEYS = 6000;

interface Accumulator {
  sum: number;
  seen: number[];
}

export const descriptors = {
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

export function backendWith(clock: { now: number } = { now: 0 }): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: keyGroupRange(0, MAX_PARALLELISM - 1),
    operatorName: 'async',
    clock: () => clock.now,
  });
}

/** Everything a snapshot holds, decoded without a backend (no TTL filtering, no side effects), in a canonical order. */
export function decode(bytes: Uint8Array | readonly Uint8Array[]): {
  states: Record<string, [StateKey, unknown][]>;
  timers: [string, StateKey, number, string][];
} {
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
    bytes instanceof Uint8Array ? [bytes] : bytes,
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

export type Decoded = ReturnType<typeof decode>;

/** Deep equality of two decoded snapshots that names the first differences (a diff of thousands of entries would take minutes). */
export function assertSameState(actual: Decoded, expected: Decoded, what: string): void {
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
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

export function fillAll(backend: HeapKeyedStateBackend): void {
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
export function mutate(backend: HeapKeyedStateBackend, next: () => number): void {
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
