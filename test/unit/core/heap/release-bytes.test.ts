import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { releaseBytes } from '../../../../src/core/heap/release-bytes.ts';

test('releaseBytes frees bytes that own their whole buffer (a v8 blob, an unpooled Buffer) and leaves slices alone', () => {
  const blob = serialize({ a: 1, b: 'two' });
  const own = Buffer.allocUnsafeSlow(4096);
  releaseBytes(blob);
  releaseBytes(own);
  assert.equal(blob.buffer.detached, true, 'a v8 blob owns its buffer: freed');
  assert.equal(own.buffer.detached, true, 'an unpooled Buffer owns its buffer: freed');

  // A slice of Node's shared pool, or of a larger buffer, is someone else's memory too: untouched.
  const pooled = Buffer.from('pooled');
  const whole = new Uint8Array(64);
  const slice = whole.subarray(8, 16);
  releaseBytes(pooled);
  releaseBytes(slice);
  assert.equal(pooled.toString(), 'pooled');
  assert.equal(whole.buffer.detached, false);
  assert.equal(slice.length, 8);
  // Twice, or on an empty buffer: nothing happens.
  releaseBytes(blob);
  releaseBytes(new Uint8Array(0));
});
