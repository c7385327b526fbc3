import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';

function backend(): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'sessions' });
}

function drain(b: HeapKeyedStateBackend, domain: 'processing' | 'event', time: number): [StateKey, number][] {
  const fired: [StateKey, number][] = [];
  b.pollTimersUpTo(domain, time, (key, timestamp) => {
    assert.equal(b.getCurrentKey(), key, 'the timer key is the current key');
    fired.push([key, timestamp]);
  });
  return fired;
}

test('timers fire in timestamp order, then registration order, up to the given time', () => {
  const b = backend();
  const register = (key: StateKey, timestamp: number) => {
    b.setCurrentKey(key);
    assert.equal(b.registerTimer('event', timestamp), true);
  };
  register('a', 30);
  register('b', 10);
  register('c', 20);
  register('d', 10);
  register('a', 10);
  register('e', 40);
  assert.equal(b.nextTimerTimestamp('event'), 10);
  assert.equal(b.nextTimerTimestamp('processing'), undefined);
  assert.deepEqual(drain(b, 'event', 25), [
    ['b', 10],
    ['d', 10],
    ['a', 10],
    ['c', 20],
  ]);
  assert.equal(b.nextTimerTimestamp('event'), 30);
  assert.deepEqual(drain(b, 'event', 29), []);
  assert.equal(
    b.pollTimersUpTo('event', 100, () => {}),
    2,
  );
  assert.equal(b.nextTimerTimestamp('event'), undefined);
});

test('a timer is registered once per key, timestamp and domain', () => {
  const b = backend();
  b.setCurrentKey('k');
  assert.equal(b.registerTimer('event', 5), true);
  assert.equal(b.registerTimer('event', 5), false);
  assert.equal(b.registerTimer('processing', 5), true);
  b.setCurrentKey('other');
  assert.equal(b.registerTimer('event', 5), true);
  assert.equal(b.numTimers('event'), 2);
  assert.deepEqual(drain(b, 'event', 5), [
    ['k', 5],
    ['other', 5],
  ]);
  assert.deepEqual(drain(b, 'processing', 5), [['k', 5]]);
  b.setCurrentKey('k');
  assert.equal(b.registerTimer('event', 5), true, 'a fired timer can be registered again');
});

test('deleting timers', () => {
  const b = backend();
  b.setCurrentKey(1);
  b.registerTimer('processing', 100);
  b.registerTimer('processing', 50);
  b.setCurrentKey(2);
  b.registerTimer('processing', 50);
  assert.equal(b.deleteTimer('processing', 100), false, 'key 2 has no timer at 100');
  assert.equal(b.deleteTimer('event', 50), false, 'other domain');
  b.setCurrentKey(1);
  assert.equal(b.deleteTimer('processing', 50), true);
  assert.equal(b.deleteTimer('processing', 50), false);
  assert.deepEqual(drain(b, 'processing', 1000), [
    [2, 50],
    [1, 100],
  ]);
});

test('timers registered while firing fire in the same poll when due, and state is scoped to the timer key', () => {
  const b = backend();
  const seen = b.getState(valueState<number>('seen', 0));
  for (const key of ['x', 'y']) {
    b.setCurrentKey(key);
    seen.update(key === 'x' ? 1 : 2);
    b.registerTimer('event', 10);
  }
  const fired: string[] = [];
  const count = b.pollTimersUpTo('event', 20, (key, timestamp) => {
    fired.push(`${String(key)}@${timestamp}=${seen.value()}`);
    if (timestamp === 10) {
      b.registerTimer('event', 15);
      b.registerTimer('event', 30);
    }
  });
  assert.equal(count, 4);
  assert.deepEqual(fired, ['x@10=1', 'y@10=2', 'x@15=1', 'y@15=2']);
  assert.equal(b.nextTimerTimestamp('event'), 30);
});

test('a timer needs a finite timestamp and a known domain', () => {
  const b = backend();
  b.setCurrentKey('k');
  assert.throws(
    () => b.registerTimer('event', Number.NaN),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_TIMER' && /"sessions"/.test(e.message),
  );
  assert.throws(
    () => b.registerTimer('event', Infinity),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_TIMER',
  );
  assert.throws(
    () => b.registerTimer('wall' as 'event', 1),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_TIME_DOMAIN',
  );
});

test('many timers with deletes fire exactly like a sorted reference', () => {
  let seed = 42;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const b = backend();
  const reference = new Map<string, [StateKey, number, number]>();
  let order = 0;
  for (let i = 0; i < 5000; i++) {
    const key = `k${Math.floor(random() * 300)}`;
    const timestamp = Math.floor(random() * 1000);
    b.setCurrentKey(key);
    const id = `${key}|${timestamp}`;
    if (random() < 0.3) {
      assert.equal(b.deleteTimer('processing', timestamp), reference.delete(id));
    } else {
      const added = b.registerTimer('processing', timestamp);
      assert.equal(added, !reference.has(id));
      if (added) reference.set(id, [key, timestamp, order++]);
    }
  }
  const expected = [...reference.values()].sort((a, c) => a[1] - c[1] || a[2] - c[2]).map(([key, timestamp]) => [key, timestamp]);
  assert.equal(b.numTimers('processing'), expected.length);
  assert.deepEqual(
    drain(b, 'processing', 499),
    expected.filter(([, t]) => (t as number) <= 499),
  );
  assert.deepEqual(
    drain(b, 'processing', 1000),
    expected.filter(([, t]) => (t as number) > 499),
  );
  assert.equal(b.numTimers('processing'), 0);
});

test('timers of keys without state survive snapshot and rescale', () => {
  const old = backend();
  for (let i = 0; i < 100; i++) {
    old.setCurrentKey(i);
    old.registerTimer(i % 2 === 0 ? 'event' : 'processing', 1000 - i);
  }
  const snapshot = old.snapshot();
  const parts = [0, 1, 2].map(
    (index) => new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 3, index), operatorName: 'sessions' }),
  );
  for (const part of parts) part.restore([snapshot]);
  const fired = parts.flatMap((part) => [...drain(part, 'event', Infinity), ...drain(part, 'processing', Infinity)]);
  assert.deepEqual(
    fired.sort((a, c) => (a[0] as number) - (c[0] as number)),
    Array.from({ length: 100 }, (_, i) => [i, 1000 - i]),
  );
});
