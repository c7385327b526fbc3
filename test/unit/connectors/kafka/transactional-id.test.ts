import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultTransactionalIdPrefix, parseTransactionalId, transactionalId } from '../../../../src/connectors/kafka/transactional-id.ts';

test('an id built from a prefix, subtask and slot parses back to them', () => {
  for (const prefix of ['weir-orders-out', 'a.b_c-d', 'x', 'weir-job-7-8']) {
    for (const [subtask, slot] of [
      [0, 0],
      [3, 12],
      [127, 4],
    ] as const) {
      const id = transactionalId(prefix, subtask, slot);
      assert.equal(id, `${prefix}-${subtask}-${slot}`);
      assert.deepEqual(parseTransactionalId(prefix, id), { subtask, slot });
    }
  }
});

test("an id of another sink whose prefix merely starts with this one is not this sink's", () => {
  assert.equal(parseTransactionalId('weir-orders-out', 'weir-orders-out-x-0-3'), undefined);
  assert.equal(parseTransactionalId('weir-orders-out', 'weir-orders-out-2-0-3'), undefined, 'the ids of a sink with the prefix weir-orders-out-2');
  assert.equal(parseTransactionalId('weir-orders', 'weir-orders-out-0-3'), undefined);
  assert.deepEqual(parseTransactionalId('weir-orders-out-2', 'weir-orders-out-2-0-3'), { subtask: 0, slot: 3 });
});

test('the prefix is matched literally, not as a pattern', () => {
  assert.equal(parseTransactionalId('a.b', 'axb-0-1'), undefined);
  assert.equal(parseTransactionalId('a+', 'aa-0-1'), undefined);
  assert.deepEqual(parseTransactionalId('a.b', 'a.b-0-1'), { subtask: 0, slot: 1 });
});

test('ids not of the form <prefix>-<subtask>-<slot> are not ours', () => {
  for (const id of [
    '',
    'weir-p',
    'weir-p-',
    'weir-p-0',
    'weir-p-0-',
    'weir-p--0-1',
    'weir-p-0-1-',
    'weir-p-a-1',
    'weir-p-0-b',
    'weir-p-0- 1',
    'weir-p-0-1x',
    'other-0-1',
  ]) {
    assert.equal(parseTransactionalId('weir-p', id), undefined, JSON.stringify(id));
  }
});

test('the default prefix is weir-<job name>-<sink uid> when that names the pair unambiguously, as before', () => {
  assert.equal(defaultTransactionalIdPrefix('payments', 'balances-out'), 'weir-payments-balances-out');
  assert.equal(defaultTransactionalIdPrefix('a.b_c', 'x'), 'weir-a.b_c-x');
  assert.equal(defaultTransactionalIdPrefix('orders', 'sink-3'), 'weir-orders-sink-3');
});

test('otherwise the default prefix stays readable and carries a hash of the original names', () => {
  assert.match(defaultTransactionalIdPrefix('my job/v2', 'sink: kafka'), /^weir-my-job-v2-sink-kafka-h[0-9a-f]{12}$/);
  assert.match(defaultTransactionalIdPrefix('orders-enrich', 'out'), /^weir-orders-enrich-out-h[0-9a-f]{12}$/);
  assert.equal(defaultTransactionalIdPrefix('my job/v2', 'sink: kafka'), defaultTransactionalIdPrefix('my job/v2', 'sink: kafka'), 'deterministic');
});

test('distinct (job name, sink uid) pairs never get the same default prefix', () => {
  const pairs: [string, string][] = [
    ['a b', 'x'],
    ['a-b', 'x'],
    ['a/b', 'x'],
    ['a', 'b-x'],
    ['a', 'b x'],
    ['a-b-x', ''],
    ['a', 'b'],
    ['a b', 'sink-1'],
    ['a-b', 'sink-1'],
    ['a', 'b-sink-1'],
    ['x', 'y z'],
    ['x', 'y-z'],
    ['x', 'y_z'],
  ];
  const prefixes = new Map<string, [string, string]>();
  for (const pair of pairs) {
    const prefix = defaultTransactionalIdPrefix(...pair);
    const clash = prefixes.get(prefix);
    assert.equal(clash, undefined, `${JSON.stringify(pair)} and ${JSON.stringify(clash)} share ${prefix}`);
    prefixes.set(prefix, pair);
  }
  // And no id of one prefix parses under another.
  for (const a of prefixes.keys()) {
    for (const b of prefixes.keys()) if (a !== b) assert.equal(parseTransactionalId(b, transactionalId(a, 0, 1)), undefined, `${a} vs ${b}`);
  }
});
