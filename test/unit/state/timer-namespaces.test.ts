/** Timer namespaces (windows, join sides): one timer per key, namespace, timestamp and domain; snapshot format 2; format 1 still restores. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';

const backend = (range = keyGroupRange(0, 127)) => new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: range, operatorName: 'windows' });

function drain(b: HeapKeyedStateBackend, domain: 'processing' | 'event', time: number): [StateKey, number, string][] {
  const fired: [StateKey, number, string][] = [];
  b.pollTimersUpTo(domain, time, (key, timestamp, namespace) => {
    fired.push([key, timestamp, namespace]);
  });
  return fired;
}

test('a timer is unique per key, namespace, timestamp and domain; deleting one leaves the others', () => {
  const b = backend();
  b.setCurrentKey('k');
  assert.equal(b.registerTimer('event', 999, '0:1000'), true);
  assert.equal(b.registerTimer('event', 999, '0:1000'), false);
  assert.equal(b.registerTimer('event', 999, '500:1000'), true, 'another window, same time');
  assert.equal(b.registerTimer('event', 999), true, 'the void namespace is one more');
  assert.equal(b.numTimers('event'), 3);
  assert.equal(b.deleteTimer('event', 999, '0:1000'), true);
  assert.equal(b.deleteTimer('event', 999, '0:1000'), false);
  assert.deepEqual(drain(b, 'event', 999), [
    ['k', 999, '500:1000'],
    ['k', 999, ''],
  ]);
});

test('namespaced timers survive snapshot and a rescale to 3 subtasks', () => {
  const old = backend();
  for (let i = 0; i < 60; i++) {
    old.setCurrentKey(`key-${i}`);
    old.registerTimer('event', 1000 + i, `${i}:${i + 10}`);
    old.registerTimer('event', 1000 + i); // same time, void namespace
    old.registerTimer('processing', 5000 + i, 'right');
  }
  const snapshot = old.snapshot();
  assert.equal(snapshot[4], 6, 'format version 6');
  const parts = [0, 1, 2].map((index) => backend(computeKeyGroupRangeForOperatorIndex(128, 3, index)));
  for (const part of parts) part.restore([snapshot]);
  const events = parts.flatMap((part) => drain(part, 'event', Infinity)).sort((a, b) => a[1] - b[1] || a[2].localeCompare(b[2]));
  assert.equal(events.length, 120);
  for (let i = 0; i < 60; i++) {
    assert.deepEqual(events[2 * i], [`key-${i}`, 1000 + i, '']);
    assert.deepEqual(events[2 * i + 1], [`key-${i}`, 1000 + i, `${i}:${i + 10}`]);
  }
  assert.equal(parts.flatMap((part) => drain(part, 'processing', Infinity)).filter(([, , namespace]) => namespace === 'right').length, 60);
});

// Written by the Weir before timer namespaces (format 1): value state "count" of keys a, b, c = 1, 2, 3,
// event-time timers at 1000 + i and processing-time timers at 2000 + i.
const FORMAT_1_SNAPSHOT =
  'V0tTQgEAgAAAAAAAAAB/AAAAAQAAAAEFAAAAY291bnQDAAAAQwAAAFgAAABGAAAArHY14XMAAACeAAAARgAAAFYZnyB7AAAA5AAAAEYAAADuc0s0tZg2bwEAAAAAAAAAAQAAAAwAAAD/D0ECIgFiSQQkAAIBAAAADQAAAP8PQQIiAWJJoh8kAAIBAAAADQAAAP8PQQIiAWJJ0g8kAAIBAAAAAAAAAAEAAAAMAAAA/w9BAiIBYUkCJAACAQAAAA0AAAD/D0ECIgFhSaAfJAACAQAAAA0AAAD/D0ECIgFhSdAPJAACAQAAAAAAAAABAAAADAAAAP8PQQIiAWNJBiQAAgEAAAANAAAA/w9BAiIBY0mkHyQAAgEAAAANAAAA/w9BAiIBY0nUDyQAAg==';

test('a format 1 snapshot (before namespaces) restores: its timers in the void namespace', () => {
  const b = backend();
  b.restore([Buffer.from(FORMAT_1_SNAPSHOT, 'base64')]);
  const count = b.getState(valueState<number>('count'));
  for (const [i, key] of ['a', 'b', 'c'].entries()) {
    b.setCurrentKey(key);
    assert.equal(count.value(), i + 1);
  }
  assert.deepEqual(
    drain(b, 'event', Infinity).sort((x, y) => x[1] - y[1]),
    [
      ['a', 1000, ''],
      ['b', 1001, ''],
      ['c', 1002, ''],
    ],
  );
  assert.deepEqual(
    drain(b, 'processing', Infinity).map(([key, timestamp]) => [key, timestamp]),
    [
      ['a', 2000],
      ['b', 2001],
      ['c', 2002],
    ],
  );
  // Written again, it is format 4 and restores the same.
  const again = backend();
  const fresh = backend();
  fresh.restore([Buffer.from(FORMAT_1_SNAPSHOT, 'base64')]);
  const rewritten = fresh.snapshot();
  assert.equal(rewritten[4], 6);
  again.restore([rewritten]);
  assert.equal(again.numTimers('event'), 3);
});
