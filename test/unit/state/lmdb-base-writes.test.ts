import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';

/**
 * A base is lmdb's compacting copy, and lmdb-js 3.5's lmdb crashed the process (a segmentation
 * fault, or `Assertion 'key.mv_size > 0' failed in mdb_page_alloc()`) on writes into a reopened
 * compacted copy once they reused freed pages. A restore now loads the copy into a new environment
 * (lmdb-base-load.ts): a restored backend takes hundreds of thousands of random writes and
 * deletions, and reads back what it wrote.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-base-writes-'));
after(() => rmSync(root, { recursive: true, force: true }));
const range = keyGroupRange(0, 127);
const KEYS = 200_000;

test('a backend restored from a base of 200,000 keys takes 600,000 random writes and deletions', async () => {
  const source = new LmdbKeyedStateBackend({ maxParallelism: 128, keyGroupRange: range, operatorName: 'source', dir: mkdtempSync(join(root, 's-')) });
  const totals = source.getState(valueState<{ count: number; text: string }>('totals'));
  for (let i = 0; i < KEYS; i++) {
    source.setCurrentKey(`key-${i}`);
    totals.update({ count: i, text: 'x'.repeat(i % 40) });
  }
  const writer = source.snapshotAsync({ checkpointId: 1, base: undefined });
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  const bytes = writer.result();
  await source.dispose();

  const restored = (await restoreKeyedStateBackend(
    { stateBackend: 'disk', maxParallelism: 128, keyGroupRange: range, operatorName: 'restored', reinterpreted: false, dir: mkdtempSync(join(root, 'r-')) },
    [[bytes]],
  )) as LmdbKeyedStateBackend;
  try {
    const state = restored.getState(valueState<{ count: number; text: string }>('totals'));
    restored.setCurrentKey('key-12345');
    assert.deepEqual(state.value(), { count: 12345, text: 'x'.repeat(12345 % 40) });
    let seed = 7;
    const expected = new Map<number, number | undefined>();
    for (let i = 0; i < 600_000; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const k = seed % KEYS;
      restored.setCurrentKey(`key-${k}`);
      if (seed % 5 === 0) {
        state.clear();
        expected.set(k, undefined);
      } else {
        state.update({ count: -i, text: 'y'.repeat(seed % 70) });
        expected.set(k, -i);
      }
    }
    for (const [k, count] of [...expected].slice(0, 2000)) {
      restored.setCurrentKey(`key-${k}`);
      assert.equal(state.value()?.count, count);
    }
  } finally {
    await restored.dispose();
  }
});
