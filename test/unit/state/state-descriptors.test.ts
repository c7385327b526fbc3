import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { aggregatingState, listState, mapState, reducingState, valueState } from '../../../src/core/state/state-descriptors.ts';

test('factories build plain descriptors', () => {
  assert.deepEqual(valueState('v'), { kind: 'value', name: 'v' });
  assert.deepEqual(valueState('v', 3), { kind: 'value', name: 'v', defaultValue: 3 });
  assert.deepEqual(listState('l'), { kind: 'list', name: 'l' });
  assert.deepEqual(mapState('m'), { kind: 'map', name: 'm' });
  const reduce = (a: number, b: number) => a + b;
  assert.deepEqual(reducingState('r', reduce), { kind: 'reducing', name: 'r', reduce });
  const aggregate = { createAccumulator: () => 0, add: (v: number, acc: number) => acc + v, getResult: (acc: number) => String(acc) };
  assert.deepEqual(aggregatingState('a', aggregate), { kind: 'aggregating', name: 'a', ...aggregate });
});

test('descriptors need a name and functions', () => {
  assert.throws(
    () => valueState(''),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_STATE_NAME' && e.fault === 'user',
  );
  assert.throws(
    () => reducingState<number>('r', undefined as unknown as (a: number, b: number) => number),
    (e: unknown) => e instanceof WeirError && e.code === 'INVALID_STATE_DESCRIPTOR' && /"r"/.test(e.message),
  );
});
