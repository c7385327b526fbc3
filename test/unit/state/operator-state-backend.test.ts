import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { OperatorStateBackend } from '../../../src/state/operator-state-backend.ts';

function oldSubtasks(lists: string[][], unions: string[][]): Uint8Array[] {
  return lists.map((entries, i) => {
    const backend = new OperatorStateBackend();
    backend.getListState<string>('splits').addAll(entries);
    backend.getUnionListState<string>('offsets').update(unions[i]!);
    return backend.snapshot();
  });
}

const restoreAll = (snapshots: Uint8Array[], parallelism: number) =>
  Array.from({ length: parallelism }, (_, i) => OperatorStateBackend.restoreFor(snapshots, parallelism, i));

test('list state methods', () => {
  const backend = new OperatorStateBackend();
  const state = backend.getListState<number>('xs');
  assert.equal(backend.getListState<number>('xs'), state);
  assert.deepEqual(state.get(), []);
  state.add(1);
  state.addAll([2, 3]);
  assert.deepEqual(state.get(), [1, 2, 3]);
  const replacement = [9];
  state.update(replacement);
  replacement.push(10);
  assert.deepEqual(state.get(), [9]);
  state.clear();
  assert.deepEqual(state.get(), []);
});

test('split list state is spread evenly and union list state goes to everyone', () => {
  const snapshots = oldSubtasks([['a', 'b', 'c', 'd'], ['e']], [['o1'], ['o2', 'o3']]);
  const three = restoreAll(snapshots, 3);
  assert.deepEqual(
    three.map((backend) => backend.getListState<string>('splits').get()),
    [['a', 'b'], ['c', 'd'], ['e']],
  );
  for (const backend of three) assert.deepEqual(backend.getUnionListState<string>('offsets').get(), ['o1', 'o2', 'o3']);

  const one = restoreAll(
    three.map((backend) => backend.snapshot()),
    1,
  );
  assert.deepEqual(one[0]!.getListState<string>('splits').get(), ['a', 'b', 'c', 'd', 'e']);
  assert.deepEqual(one[0]!.getUnionListState<string>('offsets').get(), ['o1', 'o2', 'o3', 'o1', 'o2', 'o3', 'o1', 'o2', 'o3']);

  const five = restoreAll(oldSubtasks([['a', 'b'], ['c']], [[], []]), 5);
  assert.deepEqual(
    five.map((backend) => backend.getListState<string>('splits').get()),
    [['a'], ['b'], ['c'], [], []],
  );
});

test('at the same parallelism each subtask gets its own list back', () => {
  const snapshots = oldSubtasks([['a', 'b', 'c'], [], ['d']], [['x'], [], []]);
  const again = restoreAll(snapshots, 3);
  assert.deepEqual(
    again.map((backend) => backend.getListState<string>('splits').get()),
    [['a', 'b', 'c'], [], ['d']],
  );
  for (const backend of again) assert.deepEqual(backend.getUnionListState<string>('offsets').get(), ['x']);
});

test('redistribution is deterministic and loses nothing', () => {
  const lists = Array.from({ length: 4 }, (_, s) => Array.from({ length: 3 + s * 5 }, (_, i) => `s${s}-${i}`));
  const snapshots = oldSubtasks(lists, [[], [], [], []]);
  for (const parallelism of [1, 2, 3, 5, 7, 40]) {
    const shares = restoreAll(snapshots, parallelism).map((backend) => backend.getListState<string>('splits').get());
    assert.deepEqual(shares.flat(), lists.flat());
    const sizes = shares.map((share) => share.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1);
    assert.deepEqual(
      restoreAll(snapshots, parallelism).map((backend) => backend.getListState<string>('splits').get()),
      shares,
    );
  }
});

test('restored states not asked for are kept, fresh starts are empty, kinds are checked', () => {
  const backend = OperatorStateBackend.restoreFor(oldSubtasks([['a']], [['u']]), 1, 0);
  assert.deepEqual(backend.stateNames().sort(), ['offsets', 'splits']);
  const carried = OperatorStateBackend.restoreFor([backend.snapshot()], 1, 0);
  assert.deepEqual(carried.getListState('splits').get(), ['a']);
  assert.throws(
    () => carried.getListState('offsets'),
    (e: unknown) => e instanceof WeirError && e.code === 'STATE_KIND_MISMATCH' && /"offsets"/.test(e.message) && /restored/.test(e.message),
  );
  const fresh = OperatorStateBackend.restoreFor([], 4, 2);
  assert.deepEqual(fresh.stateNames(), []);
  fresh.getListState('x');
  assert.throws(
    () => fresh.getUnionListState('x'),
    (e: unknown) => e instanceof WeirError && e.code === 'STATE_KIND_MISMATCH' && e.fault === 'user',
  );
  assert.throws(
    () => OperatorStateBackend.restoreFor([], 2, 2),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_OPERATOR_INDEX',
  );
});

test('operator snapshots: version, corruption, unclonable values', () => {
  const [snapshot] = oldSubtasks([['a', 'b']], [['c']]);
  const future = snapshot!.slice();
  future[4] = 9;
  future[5] = 0;
  assert.throws(
    () => OperatorStateBackend.restoreFor([future], 1, 0),
    (e: unknown) => e instanceof WeirError && /state snapshot format version 9 is newer than this Weir supports \(1\)/.test(e.message),
  );
  for (let length = 0; length < snapshot!.length; length++) {
    assert.throws(
      () => OperatorStateBackend.restoreFor([snapshot!.subarray(0, length)], 1, 0),
      (e: unknown) => e instanceof WeirError && e.code === 'STATE_SNAPSHOT_CORRUPT',
    );
  }
  for (let at = 6; at < snapshot!.length; at++) {
    const altered = snapshot!.slice();
    altered[at]! ^= 0x01;
    assert.throws(
      () => OperatorStateBackend.restoreFor([altered], 1, 0),
      (e: unknown) => e instanceof WeirError && e.code === 'STATE_SNAPSHOT_CORRUPT',
    );
  }
  const keyed = new OperatorStateBackend();
  keyed.getListState<unknown>('fns').add(Symbol('nope'));
  assert.throws(
    () => keyed.snapshot(),
    (e: unknown) => e instanceof WeirError && e.code === 'STATE_NOT_SERIALIZABLE' && /"fns"/.test(e.message),
  );
});
