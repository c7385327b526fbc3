import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { parseDuration } from '../../../../src/core/time/duration.ts';

test('durations with units and plain milliseconds', () => {
  assert.equal(parseDuration('500ms', 'x'), 500);
  assert.equal(parseDuration('15m', 'x'), 900_000);
  assert.equal(parseDuration('1h', 'x'), 3_600_000);
  assert.equal(parseDuration('2500', 'x'), 2500);
  assert.equal(parseDuration(42, 'x'), 42);
});

test('a bad duration names the setting and the fix', () => {
  for (const bad of ['soon', '-5s', '', Number.NaN, -1]) {
    assert.throws(
      () => parseDuration(bad, 'checkpointing.interval'),
      (error: unknown) => error instanceof WeirError && error.message.startsWith('checkpointing.interval:') && /500ms/.test(error.hint ?? ''),
    );
  }
});
