import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256, sha256InSlices } from '../../../src/checkpoint/storage/state-files.ts';

test('a state file hashed in slices (the task runs between them) has the same SHA-256 as hashed at once', async () => {
  for (const size of [0, 10, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 9 * 1024 * 1024 + 7]) {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 4093) bytes[i] = i % 251;
    assert.equal(await sha256InSlices(bytes), sha256(bytes), `${size} bytes`);
  }
});
