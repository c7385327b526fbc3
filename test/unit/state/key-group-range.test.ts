import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  EMPTY_KEY_GROUP_RANGE,
  formatKeyGroupRange,
  keyGroupRange,
  keyGroupRangeContains,
  keyGroupRangeIntersection,
  keyGroupRangeSize,
} from '../../../src/state/key-group-range.ts';

test('key group ranges are inclusive and empty when end < start', () => {
  const range = keyGroupRange(4, 7);
  assert.equal(keyGroupRangeSize(range), 4);
  assert.ok(keyGroupRangeContains(range, 4) && keyGroupRangeContains(range, 7));
  assert.ok(!keyGroupRangeContains(range, 3) && !keyGroupRangeContains(range, 8));
  assert.equal(keyGroupRangeSize(EMPTY_KEY_GROUP_RANGE), 0);
  assert.equal(keyGroupRangeSize({ start: 5, end: 4 }), 0);
  assert.ok(!keyGroupRangeContains(EMPTY_KEY_GROUP_RANGE, 0));
  assert.deepEqual(keyGroupRangeIntersection(range, keyGroupRange(6, 20)), { start: 6, end: 7 });
  assert.equal(keyGroupRangeSize(keyGroupRangeIntersection(range, keyGroupRange(8, 20))), 0);
  assert.equal(formatKeyGroupRange(range), '4-7');
  assert.equal(formatKeyGroupRange(EMPTY_KEY_GROUP_RANGE), 'empty');
});
