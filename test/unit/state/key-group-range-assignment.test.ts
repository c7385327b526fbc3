import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { keyGroupRangeSize } from '../../../src/state/key-group-range.ts';
import {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  checkParallelism,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  DEFAULT_MAX_PARALLELISM,
  keyHash,
  UPPER_BOUND_MAX_PARALLELISM,
  validateStateKey,
} from '../../../src/state/key-group-range-assignment.ts';
import { murmurHash3X86_32 } from '../../../src/state/murmur-hash3.ts';

test('constants are Flink-like', () => {
  assert.equal(DEFAULT_MAX_PARALLELISM, 128);
  assert.equal(UPPER_BOUND_MAX_PARALLELISM, 32768);
});

test('key groups of operator indexes partition [0, maxParallelism) and agree with computeOperatorIndexForKeyGroup', () => {
  const maxParallelisms = [1, 2, 3, 7, 10, 64, 127, 128, 129, 1000, 4096, UPPER_BOUND_MAX_PARALLELISM];
  for (const maxParallelism of maxParallelisms) {
    const parallelisms = new Set([1, 2, 3, 5, 7, 8, 13, 31, 64, 100, 127, 128, 999, maxParallelism - 1, maxParallelism]);
    for (const parallelism of parallelisms) {
      if (parallelism < 1 || parallelism > maxParallelism) continue;
      let next = 0;
      for (let index = 0; index < parallelism; index++) {
        const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, index);
        assert.equal(range.start, next, `maxP ${maxParallelism} p ${parallelism} i ${index} is contiguous`);
        assert.ok(keyGroupRangeSize(range) >= 1, 'never empty');
        const size = keyGroupRangeSize(range);
        assert.ok(size === Math.floor(maxParallelism / parallelism) || size === Math.ceil(maxParallelism / parallelism), 'balanced');
        // Checking every key group of big configurations is slow; ends and a sample suffice there.
        const step = Math.max(1, Math.floor(size / 16));
        for (let keyGroup = range.start; keyGroup <= range.end; keyGroup += step) {
          assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup), index);
        }
        assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, range.end), index);
        next = range.end + 1;
      }
      assert.equal(next, maxParallelism, 'the ranges cover every key group');
    }
  }
});

test('exhaustive agreement for small maxParallelism', () => {
  for (let maxParallelism = 1; maxParallelism <= 200; maxParallelism++) {
    for (let parallelism = 1; parallelism <= maxParallelism; parallelism++) {
      for (let index = 0; index < parallelism; index++) {
        const { start, end } = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, index);
        assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, start), index);
        assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, end), index);
        if (start > 0) assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, start - 1), index - 1);
      }
    }
  }
});

test('Flink ranges for 128 / 3', () => {
  assert.deepEqual(computeKeyGroupRangeForOperatorIndex(128, 3, 0), { start: 0, end: 42 });
  assert.deepEqual(computeKeyGroupRangeForOperatorIndex(128, 3, 1), { start: 43, end: 85 });
  assert.deepEqual(computeKeyGroupRangeForOperatorIndex(128, 3, 2), { start: 86, end: 127 });
  assert.throws(
    () => computeKeyGroupRangeForOperatorIndex(128, 3, 3),
    (e: unknown) => e instanceof WeirError && e.fault === 'internal',
  );
});

test('keyHash is pinned: the same values in every process and Node version', () => {
  const pinned: [StateKey, number][] = [
    ['a', 3889858547],
    ['hello', 4291419488],
    ['', 3831157163],
    ['ü', 241438191],
    [1, 425624927],
    [0, 3468965017],
    [-0, 3468965017],
    [3.5, 848061788],
    [1n, 3081166232],
    [-12n, 718608125],
    [true, 712661126],
    [false, 899251846],
    ['x'.repeat(100), 1518197643],
  ];
  for (const [key, hash] of pinned) assert.equal(keyHash(key), hash, `keyHash(${typeof key} ${String(key).slice(0, 10)})`);
});

test('keyHash is murmur3 over a type tag and the canonical bytes', () => {
  const tagged = (tag: number, bytes: Uint8Array) => murmurHash3X86_32(Buffer.concat([Uint8Array.of(tag), bytes]));
  const strings = ['', 'a', 'key-1', 'ü€😀', 'a\u0080b', 'x'.repeat(63), 'y'.repeat(64), 'z'.repeat(65), `${'é'.repeat(40)}abc`, 'q'.repeat(5000)];
  for (const text of strings) assert.equal(keyHash(text), tagged(1, Buffer.from(text, 'utf8')), `string of length ${text.length}`);
  for (const value of [0, 1, -1, 3.25, 1e300, -Infinity, Number.MAX_SAFE_INTEGER]) {
    const bytes = Buffer.alloc(8);
    bytes.writeDoubleLE(value);
    assert.equal(keyHash(value), tagged(2, bytes));
  }
  for (const value of [0n, 12345678901234567890n, -5n]) assert.equal(keyHash(value), tagged(3, Buffer.from(value.toString(), 'latin1')));
  assert.equal(keyHash(true), tagged(4, Uint8Array.of(1)));
  assert.equal(keyHash(false), tagged(4, Uint8Array.of(0)));
});

test('keys of different types are different keys', () => {
  const hashes = new Set([keyHash('1'), keyHash(1), keyHash(1n), keyHash(true)]);
  assert.equal(hashes.size, 4);
  assert.notEqual(keyHash('true'), keyHash(true));
});

test('keyHash spreads keys evenly over key groups', () => {
  const counts = new Array(128).fill(0);
  for (let i = 0; i < 128_000; i++) counts[assignToKeyGroup(`user-${i}`, 128)]++;
  for (const count of counts) assert.ok(count > 800 && count < 1200, `key group got ${count} of ~1000`);
  for (let i = 0; i < 1000; i++) {
    const keyGroup = assignToKeyGroup(i, 100);
    assert.ok(keyGroup >= 0 && keyGroup < 100);
    assert.equal(keyGroup, keyHash(i) % 100);
    assert.equal(assignKeyToParallelOperator(i, 100, 7), computeOperatorIndexForKeyGroup(100, 7, keyGroup));
  }
});

test('checkParallelism names the setting and the fix', () => {
  checkParallelism(8, 128, 'x');
  checkParallelism(1, 1, 'x');
  checkParallelism(32768, 32768, 'x');
  const expectError = (p: number, m: number, message: RegExp, hint: RegExp) =>
    assert.throws(
      () => checkParallelism(p, m, 'parallelism of operator "counts"'),
      (e: unknown) => e instanceof WeirError && e.fault === 'user' && message.test(e.message) && hint.test(e.hint ?? ''),
    );
  expectError(
    8,
    4,
    /^parallelism of operator "counts": maxParallelism \(4\) is below parallelism \(8\)$/,
    /raise maxParallelism; it is fixed for the life of a job/,
  );
  expectError(0, 128, /parallelism \(0\)/, /1 or more/);
  expectError(1.5, 128, /parallelism \(1.5\)/, /1 or more/);
  expectError(1, 0, /maxParallelism \(0\)/, /between 1 and 32768/);
  expectError(1, 32769, /maxParallelism \(32769\)/, /between 1 and 32768/);
});

test('validateStateKey accepts primitives and names the operator otherwise', () => {
  assert.equal(validateStateKey('k', 'op'), 'k');
  assert.equal(validateStateKey(5, 'op'), 5);
  assert.ok(Object.is(validateStateKey(-0, 'op'), 0));
  assert.equal(validateStateKey(5n, 'op'), 5n);
  assert.equal(validateStateKey(false, 'op'), false);
  for (const [bad, shown] of [
    [undefined, 'undefined'],
    [null, 'null'],
    [Number.NaN, 'NaN'],
    [{}, 'an object'],
    [[1], 'an array'],
    [Symbol('s'), 'a symbol'],
    [() => 1, 'a function'],
  ] as const) {
    assert.throws(
      () => validateStateKey(bad, 'sessionize'),
      (e: unknown) =>
        e instanceof WeirError && e.fault === 'user' && e.message.includes('"sessionize"') && e.message.includes(shown) && /string/.test(e.hint ?? ''),
    );
  }
});
