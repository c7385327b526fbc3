import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cachedDataVersionTag, getHeapSpaceStatistics } from 'node:v8';
import { releaseStartupHeap } from '../../../../src/core/heap/release-startup-heap.ts';

const newSpaceBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

test("the start-up heap is given back: the young generation shrinks, and V8's flags (the code cache's key) are as before", () => {
  // Grow the new space as loading modules does: many objects that survive a few scavenges.
  let held: object[] = [];
  for (let round = 0; round < 8; round++) {
    held = [];
    for (let i = 0; i < 200_000; i++) held.push({ i, name: `record ${i}` });
  }
  const grown = newSpaceBytes();
  held = [];
  const tag = cachedDataVersionTag();
  releaseStartupHeap();
  releaseStartupHeap(); // a second call reuses the collector
  assert.ok(newSpaceBytes() < grown, `new space ${newSpaceBytes()} bytes, was ${grown}`);
  assert.ok(newSpaceBytes() <= 2 * 1024 * 1024, `new space ${newSpaceBytes()} bytes after`);
  assert.equal(cachedDataVersionTag(), tag);
  assert.equal((globalThis as { gc?: unknown }).gc, undefined, 'gc is not left on the global object');
  assert.equal(held.length, 0);
});
