import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listState, mapState, type StateDescriptor, valueState } from '../../../src/core/state/state-descriptors.ts';
import { enableTimeToLive, type StateTtlConfig } from '../../../src/core/state/state-ttl-config.ts';
import { assertSameState, backendWith, decode, descriptors, fillAll, KEYS, mutate, random } from './keyed-state-fixtures.ts';

/**
 * Asynchronous heap snapshots (issue 34): the snapshot taken at the barrier is written slice by
 * slice while the operator goes on changing the state, and must hold exactly the state at the
 * barrier (copy-on-write per key, Flink's CopyOnWriteStateTable idea).
 */

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
  assert.equal(bytes[4], 6, 'format version 6: entries in chunks, a flags byte, the index at the end');
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
