import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { AsyncKeyedStateSnapshot } from '../../../src/core/state/keyed-state-backend.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { canonicalChains } from '../../../src/state/lmdb-base-restore.ts';
import { assertSameState, backendWith, decode, descriptors, fillAll, KEYS, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';

/**
 * Incremental heap checkpoints (issue 34): a snapshot holds only the keys changed since the
 * checkpoint it adds to; the chain (a full snapshot, then the incremental ones, oldest first)
 * restores exactly the state at the last barrier, also when checkpoints in between were aborted,
 * values changed while the snapshot was written, and keys or timers were deleted.
 */

/** A chain as the canonical reader takes it (a disk backend's base converted, as a restore at another range does; a heap chain as it is). */
async function canonical(chain: Uint8Array[]): Promise<Uint8Array[]> {
  const folder = mkdtempSync(join(tmpdir(), 'weir-canonical-'));
  try {
    return (await canonicalChains([chain], keyGroupRange(0, MAX_PARALLELISM - 1), { folder, operatorName: 'convert', maxParallelism: MAX_PARALLELISM })).flat();
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Writes `writer` to its end (a disk backend's full one waits for its file copy, off the thread). */
async function finish(writer: AsyncKeyedStateSnapshot): Promise<void> {
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
}

/** Takes checkpoints 1..count with random changes between and during them (and during a disk backend's file copy); every `abortEvery`th is never confirmed. */
async function checkpoints(backend: HeapKeyedStateBackend, count: number, abortEvery: number, changesBetween: number) {
  const next = random(34);
  const chains = new Map<number, Uint8Array[]>();
  const taken: { id: number; delta: boolean; bytes: number; chain: Uint8Array[]; atBarrier: ReturnType<typeof decode> }[] = [];
  let completed: number | undefined;
  for (let id = 1; id <= count; id++) {
    for (let i = 0; i < changesBetween; i++) mutate(backend, next);
    const atBarrier = decode(backend.snapshot());
    const writer: AsyncKeyedStateSnapshot = backend.snapshotAsync({ checkpointId: id, base: completed });
    // A step of budget 0 reads a few keys (the disk backend's delta looks at the clock every 16
    // reads), so a few changes a step: about one for every five keys read.
    while (!writer.step(0)) {
      for (let i = 0; i < 3; i++) mutate(backend, next);
      await writer.waiting?.();
    }
    const bytes = writer.result();
    const chain = writer.delta === undefined ? [bytes] : [...(chains.get(writer.delta.base) as Uint8Array[]), bytes];
    taken.push({ id, delta: writer.delta !== undefined, bytes: bytes.byteLength, chain, atBarrier });
    if (id % abortEvery === 0) continue; // aborted: the next one adds to the last completed one
    chains.set(id, chain);
    completed = id;
    backend.notifyCheckpointComplete(id);
  }
  return taken;
}

test('a chain of incremental snapshots restores exactly the state at each barrier, across aborted checkpoints', async () => {
  const backend = backendWith();
  fillAll(backend);
  const taken = await checkpoints(backend, 10, 3, 300);
  for (const { id, chain, atBarrier } of taken) assertSameState(decode(await canonical(chain)), atBarrier, `checkpoint ${id} (a chain of ${chain.length})`);
  const [first, ...rest] = taken;
  assert.equal(first?.delta, false, 'the first snapshot is full');
  assert.ok(
    rest.every((one) => one.delta),
    'every later one adds to the last completed one',
  );
  for (const one of rest)
    assert.ok(one.bytes < (first as { bytes: number }).bytes / 3, `checkpoint ${one.id}: ${one.bytes} bytes, the full one ${first?.bytes}`);
  // Checkpoint 4 follows the aborted 3: it adds to 2, so it holds 3's changes too.
  assert.equal(taken[3]?.chain.length, taken[1]!.chain.length + 1);
});

test('the restored chain goes on as the original: reads, timers, and a later full snapshot agree', async () => {
  const backend = backendWith();
  fillAll(backend);
  const taken = await checkpoints(backend, 4, 100, 500);
  const last = taken.at(-1)!;
  const restored = backendWith();
  restored.restore(await canonical(last.chain));
  assertSameState(decode(restored.snapshot()), last.atBarrier, 'restored from the chain');
  restored.setCurrentKey('key-42');
  assert.equal(typeof restored.getState(descriptors.reducing).get(), 'number');
});

test('a chain restores at another parallelism: each half of the key groups takes its own keys', async () => {
  const backend = backendWith();
  fillAll(backend);
  const last = (await checkpoints(backend, 3, 100, 400)).at(-1)!;
  const chain = await canonical(last.chain);
  const halves = [0, 1].map((g) => {
    const half = new HeapKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: keyGroupRange(g, g), operatorName: 'half' });
    half.restore(chain);
    return half;
  });
  const count = (half: HeapKeyedStateBackend) => decode(half.snapshot()).states.value?.length ?? 0;
  assert.equal(count(halves[0]!) + count(halves[1]!), last.atBarrier.states.value?.length);
  assert.ok(KEYS > 0);
});

test('without a completed checkpoint to add to, a snapshot is full; a delta needs a full snapshot before it', async () => {
  const backend = backendWith();
  fillAll(backend);
  const one = backend.snapshotAsync({ checkpointId: 1, base: undefined });
  await finish(one);
  assert.equal(one.delta, undefined);
  const two = backend.snapshotAsync({ checkpointId: 2, base: 7 }); // a base this backend never saw
  await finish(two);
  assert.equal(two.delta, undefined);
  backend.notifyCheckpointComplete(2);
  mutate(backend, random(1));
  const three = backend.snapshotAsync({ checkpointId: 3, base: 2 });
  three.runToEnd();
  assert.notEqual(three.delta, undefined);
  assert.throws(() => backendWith().restore([three.result()]), /incremental snapshot with no full snapshot before it/);
});
