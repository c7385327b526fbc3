import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { assertSameState, backendWith, decode, descriptors, fillAll, KEYS, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';

/**
 * Incremental heap checkpoints (issue 34): a snapshot holds only the keys changed since the
 * checkpoint it adds to; the chain (a full snapshot, then the incremental ones, oldest first)
 * restores exactly the state at the last barrier, also when checkpoints in between were aborted,
 * values changed while the snapshot was written, and keys or timers were deleted.
 */

/** Takes checkpoints 1..count with random changes between and during them; every `abortEvery`th is never confirmed. */
function checkpoints(backend: HeapKeyedStateBackend, count: number, abortEvery: number, changesBetween: number) {
  const next = random(34);
  const chains = new Map<number, Uint8Array[]>();
  const taken: { id: number; delta: boolean; bytes: number; chain: Uint8Array[]; atBarrier: ReturnType<typeof decode> }[] = [];
  let completed: number | undefined;
  for (let id = 1; id <= count; id++) {
    for (let i = 0; i < changesBetween; i++) mutate(backend, next);
    const atBarrier = decode(backend.snapshot());
    const writer = backend.snapshotAsync({ checkpointId: id, base: completed });
    while (!writer.step(0)) for (let i = 0; i < 100; i++) mutate(backend, next);
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

test('a chain of incremental snapshots restores exactly the state at each barrier, across aborted checkpoints', () => {
  const backend = backendWith();
  fillAll(backend);
  const taken = checkpoints(backend, 10, 3, 300);
  for (const { id, chain, atBarrier } of taken) assertSameState(decode(chain), atBarrier, `checkpoint ${id} (a chain of ${chain.length})`);
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

test('the restored chain goes on as the original: reads, timers, and a later full snapshot agree', () => {
  const backend = backendWith();
  fillAll(backend);
  const taken = checkpoints(backend, 4, 100, 500);
  const last = taken.at(-1)!;
  const restored = backendWith();
  restored.restore(last.chain);
  assertSameState(decode(restored.snapshot()), last.atBarrier, 'restored from the chain');
  restored.setCurrentKey('key-42');
  assert.equal(typeof restored.getState(descriptors.reducing).get(), 'number');
});

test('a chain restores at another parallelism: each half of the key groups takes its own keys', () => {
  const backend = backendWith();
  fillAll(backend);
  const last = checkpoints(backend, 3, 100, 400).at(-1)!;
  const halves = [0, 1].map((g) => {
    const half = new HeapKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: keyGroupRange(g, g), operatorName: 'half' });
    half.restore(last.chain);
    return half;
  });
  const count = (half: HeapKeyedStateBackend) => decode(half.snapshot()).states.value?.length ?? 0;
  assert.equal(count(halves[0]!) + count(halves[1]!), last.atBarrier.states.value?.length);
  assert.ok(KEYS > 0);
});

test('without a completed checkpoint to add to, a snapshot is full; a delta needs a full snapshot before it', () => {
  const backend = backendWith();
  fillAll(backend);
  const one = backend.snapshotAsync({ checkpointId: 1, base: undefined });
  one.runToEnd();
  assert.equal(one.delta, undefined);
  const two = backend.snapshotAsync({ checkpointId: 2, base: 7 }); // a base this backend never saw
  two.runToEnd();
  assert.equal(two.delta, undefined);
  backend.notifyCheckpointComplete(2);
  mutate(backend, random(1));
  const three = backend.snapshotAsync({ checkpointId: 3, base: 2 });
  three.runToEnd();
  assert.notEqual(three.delta, undefined);
  assert.throws(() => backendWith().restore([three.result()]), /incremental snapshot with no full snapshot before it/);
});
