import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { hashInSlices, sha256, sha256InSlices } from '../../../src/checkpoint/storage/state-files.ts';

test('a state file hashed in slices (the task runs between them) has the same SHA-256 as hashed at once', async () => {
  for (const size of [0, 10, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 9 * 1024 * 1024 + 7]) {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 4093) bytes[i] = i % 251;
    assert.equal(await sha256InSlices(bytes), sha256(bytes), `${size} bytes`);
  }
});

test('pieces hashed in slices (one larger than a slice, small ones together) hash and count as the bytes written at once', async () => {
  const big = new Uint8Array(9 * 1024 * 1024 + 3).map((_, i) => i % 253);
  const pieces = [new Uint8Array([1, 2, 3]), big, new Uint8Array(0), new Uint8Array(5000).fill(7)];
  const hash = createHash('sha256');
  const bytes = await hashInSlices(hash, pieces);
  assert.equal(bytes, 3 + big.byteLength + 5000);
  assert.equal(hash.digest('hex'), sha256(Buffer.concat(pieces)));
});
