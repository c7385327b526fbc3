import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../../src/core/state/state-types.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { readLmdbBase } from '../../../src/state/lmdb-base-format.ts';
import { repairCompactedCopy } from '../../../src/state/lmdb-compacted-meta.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';

/**
 * A base is lmdb's compacting copy, and lmdb-js 3.5's lmdb crashed the process (a segmentation
 * fault, or `Assertion 'key.mv_size > 0' failed in mdb_page_alloc()`) on writes into a reopened
 * compacted copy once they reused freed pages: its copy's meta page carries the source's txnid
 * where upstream LMDB writes 1. A restore sets it to 1 (lmdb-compacted-meta.ts), or, for a file it
 * does not recognize, loads the copy into a new environment (lmdb-base-load.ts). Either way a
 * restored backend takes hundreds of thousands of random writes and deletions, twice through a
 * base of a restored store, and holds exactly what was written.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-base-writes-'));
after(() => rmSync(root, { recursive: true, force: true }));
const range = keyGroupRange(0, 127);
const KEYS = 200_000;
type Totals = { count: number; text: string };

async function baseOf(backend: LmdbKeyedStateBackend, checkpointId: number): Promise<Uint8Array> {
  const writer = backend.snapshotAsync({ checkpointId, base: undefined });
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  return writer.result();
}

async function restore(bytes: Uint8Array, name: string): Promise<LmdbKeyedStateBackend> {
  return (await restoreKeyedStateBackend(
    { stateBackend: 'disk', maxParallelism: 128, keyGroupRange: range, operatorName: name, reinterpreted: false, dir: mkdtempSync(join(root, 'r-')) },
    [[bytes]],
  )) as LmdbKeyedStateBackend;
}

/** Random writes and deletions into `backend`, noted in `expected`. */
function churn(backend: LmdbKeyedStateBackend, state: ValueState<Totals>, expected: Map<number, Totals>, seed: number, writes: number): void {
  for (let i = 0; i < writes; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const k = seed % KEYS;
    backend.setCurrentKey(`key-${k}`);
    if (seed % 5 === 0) {
      state.clear();
      expected.delete(k);
    } else {
      const value = { count: -i, text: 'y'.repeat(seed % 70) };
      state.update(value);
      expected.set(k, value);
    }
  }
}

function assertHolds(backend: LmdbKeyedStateBackend, state: ValueState<Totals>, expected: Map<number, Totals>): void {
  for (let k = 0; k < KEYS; k++) {
    backend.setCurrentKey(`key-${k}`);
    assert.deepEqual(state.value(), expected.get(k), `key-${k}`);
  }
}

test('a backend restored from a base of 200,000 keys takes random writes and deletions, and so does one restored from its base in turn', async () => {
  const source = new LmdbKeyedStateBackend({ maxParallelism: 128, keyGroupRange: range, operatorName: 'source', dir: mkdtempSync(join(root, 's-')) });
  const expected = new Map<number, Totals>();
  const totals = source.getState(valueState<Totals>('totals'));
  for (let k = 0; k < KEYS; k++) {
    source.setCurrentKey(`key-${k}`);
    const value = { count: k, text: 'x'.repeat(k % 40) };
    totals.update(value);
    expected.set(k, value);
  }
  let bytes = await baseOf(source, 1);
  await source.dispose();
  for (const round of [1, 2]) {
    const restored = await restore(bytes, `round-${round}`);
    try {
      const state = restored.getState(valueState<Totals>('totals'));
      assertHolds(restored, state, expected);
      churn(restored, state, expected, round * 7, 300_000);
      assertHolds(restored, state, expected);
      bytes = await baseOf(restored, round + 1);
    } finally {
      await restored.dispose();
    }
  }
});

test("a compacted copy is made writable once (meta page 1's txnid 1); a file it does not recognize is loaded in key order instead, with the same state", async () => {
  const source = new LmdbKeyedStateBackend({ maxParallelism: 128, keyGroupRange: range, operatorName: 'small', dir: mkdtempSync(join(root, 'm-')) });
  const totals = source.getState(valueState<Totals>('totals'));
  const expected = new Map<number, Totals>();
  for (let k = 0; k < 5000; k++) {
    source.setCurrentKey(`key-${k}`);
    totals.update({ count: k, text: 'z' });
    expected.set(k, { count: k, text: 'z' });
  }
  const base = readLmdbBase(await baseOf(source, 1), 'the test base');
  await source.dispose();
  const file = join(root, 'copy.mdb');
  writeFileSync(file, base.file as Uint8Array);
  assert.equal(repairCompactedCopy(file), true);
  const repaired = readFileSync(file);
  assert.equal(repairCompactedCopy(file), true, 'once more: nothing to change');
  assert.deepEqual(readFileSync(file), repaired);
  const other = join(root, 'other.mdb');
  writeFileSync(other, Buffer.alloc(8192, 7));
  assert.equal(repairCompactedCopy(other), false, 'not lmdb: left alone');

  // Meta page 0 with a txnid: not a compacting copy's; the store loads it instead of writing into it.
  const unknown = Buffer.from(base.file as Uint8Array);
  unknown.writeBigUInt64LE(3n, 24 + 128);
  const loaded = new LmdbKeyedStateBackend({
    maxParallelism: 128,
    keyGroupRange: range,
    operatorName: 'loaded',
    dir: mkdtempSync(join(root, 'l-')),
    base: { ...base, file: unknown },
  });
  try {
    const state = loaded.getState(valueState<Totals>('totals'));
    for (let k = 0; k < 5000; k++) {
      loaded.setCurrentKey(`key-${k}`);
      assert.deepEqual(state.value(), expected.get(k));
    }
    churn(loaded, state, expected, 3, 20_000);
    for (let k = 0; k < 5000; k++) {
      loaded.setCurrentKey(`key-${k}`);
      assert.deepEqual(state.value(), expected.get(k));
    }
  } finally {
    await loaded.dispose();
  }
});
