import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { aggregatingState, listState, mapState, reducingState, type StateDescriptor, valueState } from '../../../src/core/state/state-descriptors.ts';
import { enableTimeToLive, type StateTtlConfig } from '../../../src/core/state/state-ttl-config.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';

/** A backend over every key group with a clock the test moves. */
function backendWith(clock: { now: number }, snapshots?: Uint8Array[]) {
  const backend = new HeapKeyedStateBackend({
    maxParallelism: 128,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 1, 0),
    operatorName: 'ttl test',
    clock: () => clock.now,
  });
  if (snapshots !== undefined) backend.restore(snapshots);
  return backend;
}

const withTtl = <D extends StateDescriptor>(descriptor: D, config: Partial<StateTtlConfig> = {}) =>
  enableTimeToLive(descriptor, { ttl: 100, cleanup: { incremental: false }, ...config });
const keysIn = (backend: HeapKeyedStateBackend, name: string) => [...backend.keysOf(name)].sort();

test('a value expires ttl after its last write; a read renews it only with OnReadAndWrite', () => {
  const clock = { now: 1000 };
  const backend = backendWith(clock);
  const written = backend.getState(withTtl(valueState<number>('written', -1)));
  const read = backend.getState(withTtl(valueState<number>('read'), { updateType: 'OnReadAndWrite' }));
  backend.setCurrentKey('a');
  written.update(1);
  read.update(1);
  clock.now = 1090;
  assert.equal(written.value(), 1);
  assert.equal(read.value(), 1, 'renewed at 1090');
  clock.now = 1100;
  assert.equal(written.value(), -1, 'expired: the default');
  assert.equal(read.value(), 1);
  assert.deepEqual(keysIn(backend, 'written'), [], 'reading an expired value removes it');
  clock.now = 1199;
  assert.equal(read.value(), 1, 'read at 1100');
  clock.now = 1299;
  assert.equal(read.value(), undefined, 'expired 100 ms after its last read');
});

test('ReturnExpiredIfNotCleanedUp returns an expired value until a cleanup removes it', () => {
  const clock = { now: 0 };
  const backend = backendWith(clock);
  const state = backend.getState(withTtl(valueState<string>('v'), { stateVisibility: 'ReturnExpiredIfNotCleanedUp', cleanup: { incremental: false } }));
  backend.setCurrentKey('a');
  state.update('old');
  clock.now = 500;
  assert.equal(state.value(), 'old');
});

test('list elements and map entries expire one by one; reducing and aggregating state start again once expired', () => {
  const clock = { now: 0 };
  const backend = backendWith(clock);
  const list = backend.getState(withTtl(listState<number>('list')));
  const map = backend.getState(withTtl(mapState<string, number>('map')));
  const sum = backend.getState(withTtl(reducingState<number>('sum', (a, b) => a + b)));
  const count = backend.getState(
    withTtl(aggregatingState<number, number, string>('count', { createAccumulator: () => 0, add: (_v, n) => n + 1, getResult: (n) => `${n}` })),
  );
  backend.setCurrentKey('k');
  list.add(1);
  map.put('x', 1);
  sum.add(5);
  count.add(9);
  clock.now = 60;
  list.addAll([2, 3]);
  map.put('y', 2);
  assert.equal(sum.get(), 5);
  clock.now = 120;
  assert.deepEqual(list.get(), [2, 3], 'element 1 expired');
  assert.equal(map.get('x'), undefined);
  assert.equal(map.has('y'), true);
  assert.deepEqual([...map.entries()], [['y', 2]]);
  assert.equal(sum.get(), undefined);
  sum.add(7);
  assert.equal(sum.get(), 7, 'a new sum');
  count.add(1);
  assert.equal(count.get(), '1', 'a new accumulator');
  clock.now = 200;
  assert.deepEqual(list.get(), []);
  assert.equal(map.isEmpty(), true);
  assert.deepEqual(keysIn(backend, 'list'), []);
  assert.deepEqual(keysIn(backend, 'map'), []);
});

test('incremental cleanup removes the expired values of other keys as state is used, every record too with everyRecord', () => {
  const clock = { now: 0 };
  const backend = backendWith(clock);
  const state = backend.getState(withTtl(valueState<number>('v'), { cleanup: { incremental: { size: 10 } } }));
  for (let key = 0; key < 50; key++) {
    backend.setCurrentKey(`key-${key}`);
    state.update(key);
  }
  clock.now = 1000;
  backend.setCurrentKey('other');
  for (let access = 0; access < 10; access++) state.value();
  assert.equal(keysIn(backend, 'v').length, 0, '10 accesses of 10 entries each checked all 50 keys');

  const everyRecord = backendWith(clock);
  const flagged = everyRecord.getState(withTtl(valueState<number>('v'), { cleanup: { incremental: { size: 5, everyRecord: true } } }));
  for (let key = 0; key < 20; key++) {
    everyRecord.setCurrentKey(`key-${key}`);
    flagged.update(key);
  }
  clock.now = 5000;
  for (let key = 0; key < 10; key++) everyRecord.setCurrentKey(`other-${key}`);
  assert.equal(keysIn(everyRecord, 'v').length, 0, 'key changes alone cleaned up');
});

test('expired state does not come back from a checkpoint: left out with fullSnapshot cleanup, dropped on restore without it', () => {
  const clock = { now: 0 };
  const backend = backendWith(clock);
  const full = backend.getState(withTtl(valueState<number>('full'), { cleanup: { fullSnapshot: true, incremental: false } }));
  const plain = backend.getState(withTtl(valueState<number>('plain'), { stateVisibility: 'ReturnExpiredIfNotCleanedUp' }));
  backend.setCurrentKey('old');
  full.update(1);
  plain.update(1);
  clock.now = 80;
  backend.setCurrentKey('new');
  full.update(2);
  plain.update(2);
  clock.now = 150;
  const snapshot = backend.snapshot();

  const restored = backendWith(clock, [snapshot]);
  assert.deepEqual(keysIn(restored, 'full'), ['new'], 'the snapshot left the expired key out');
  assert.deepEqual(keysIn(restored, 'plain'), ['new', 'old'], 'written as it was');
  const plainAgain = restored.getState(withTtl(valueState<number>('plain'), { stateVisibility: 'ReturnExpiredIfNotCleanedUp' }));
  assert.deepEqual(keysIn(restored, 'plain'), ['new'], 'dropped as the operator asks for the state again, even where expired values are returned');
  restored.setCurrentKey('new');
  assert.equal(plainAgain.value(), 2, 'the value keeps its write time across the restore');
  clock.now = 180;
  assert.equal(plainAgain.value(), 2);
  const fresh = backendWith(clock, [restored.snapshot()]);
  const last = fresh.getState(withTtl(valueState<number>('plain')));
  fresh.setCurrentKey('new');
  assert.equal(last.value(), undefined, 'expired at 180: gone after this restore too');
});

test('turning TTL on or off for a checkpointed state is refused by name', () => {
  const clock = { now: 0 };
  const backend = backendWith(clock);
  backend.setCurrentKey('a');
  backend.getState(withTtl(valueState<number>('v'))).update(1);
  backend.getState(valueState<number>('w')).update(1);
  const snapshot = backend.snapshot();
  assert.throws(
    () => backendWith(clock, [snapshot]).getState(valueState<number>('v')),
    (error: unknown) => error instanceof WeirError && error.code === 'STATE_TTL_CHANGED' && /value state "v" without a time to live/.test(error.message),
  );
  assert.throws(
    () => backendWith(clock, [snapshot]).getState(withTtl(valueState<number>('w'))),
    /with a time to live, but the restored checkpoint holds it without one/,
  );
});

test('TTL settings are checked, each bad value named', () => {
  const bad = (config: object, pattern: RegExp) =>
    assert.throws(
      () => enableTimeToLive(valueState('count'), config as StateTtlConfig),
      (error: unknown) => error instanceof WeirError && pattern.test(error.message),
    );
  bad({}, /value state "count" ttl: needs \{ ttl \}/);
  bad({ ttl: 0 }, /ttl.ttl: must be more than 0/);
  bad({ ttl: 'a while' }, /ttl.ttl: "a while" is not a duration/);
  bad({ ttl: '1h', updateType: 'OnRead' }, /ttl.updateType: must be 'OnCreateAndWrite' or 'OnReadAndWrite'/);
  bad({ ttl: '1h', stateVisibility: 'Sometimes' }, /ttl.stateVisibility/);
  bad({ ttl: '1h', cleanup: { incremental: { size: -1 } } }, /ttl.cleanup.incremental.size/);
});
