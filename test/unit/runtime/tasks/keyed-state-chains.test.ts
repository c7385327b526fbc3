import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { DEFAULT_MAX_CHANGES, KeyedStateChains } from '../../../../src/runtime/tasks/keyed-state-chains.ts';

const handle = (size: number): StateHandle => ({ path: `f-${size}`, size }) as unknown as StateHandle;

/** Checkpoints 1, 2, ... each adding to the one before while the chains let them; returns which were full. */
function run(chains: KeyedStateChains, checkpoints: number, sizes: { full: number; change: number }): number[] {
  const full: number[] = [];
  for (let id = 1; id <= checkpoints; id++) {
    const base = chains.baseFor('keyed', id === 1 ? undefined : id - 1);
    if (base === undefined) full.push(id);
    chains.written('keyed', id, handle(base === undefined ? sizes.full : sizes.change), base);
  }
  return full;
}

test(`a full snapshot takes ${DEFAULT_MAX_CHANGES} changes by default, then the next is full again`, () => {
  assert.deepEqual(run(new KeyedStateChains(), 20, { full: 1000, change: 1 }), [1, 10, 19]);
});

test('checkpointing.incrementalMaxChanges sets how many changes a full snapshot takes', () => {
  assert.deepEqual(run(new KeyedStateChains(3), 10, { full: 1000, change: 1 }), [1, 5, 9]);
  assert.deepEqual(run(new KeyedStateChains(100), 30, { full: 1000, change: 1 }), [1]);
});

test('whatever the count, a full snapshot comes once the changes add up to its size (a restore reads at most about twice the state)', () => {
  assert.deepEqual(run(new KeyedStateChains(100), 12, { full: 1000, change: 250 }), [1, 6, 11]);
});

test('a backend that writes its base beside the chain is asked for one instead of a full snapshot, and the chain goes on until it is written', () => {
  const chains = new KeyedStateChains(3);
  assert.equal(chains.baseFor('keyed', undefined, true), undefined, 'the first snapshot is full');
  chains.written('keyed', 1, handle(1000), undefined);
  for (let id = 2; id <= 4; id++) {
    const base = chains.baseFor('keyed', id - 1, true);
    assert.equal(base?.materialize, undefined);
    chains.written('keyed', id, handle(id), base);
  }
  const five = chains.baseFor('keyed', 4, true);
  assert.equal(five?.materialize, true, 'past 3 changes: a base at this barrier, beside the chain');
  assert.equal(chains.baseFor('keyed', 4), undefined, 'a backend that cannot: a full snapshot, as before');
  chains.materializing('keyed', 5);
  chains.written('keyed', 5, handle(5), five);
  // The base is being written: the chain goes on, no second base is asked for.
  const six = chains.baseFor('keyed', 5, true);
  assert.equal(six?.materialize, undefined);
  assert.deepEqual(
    six?.chain.map((link) => link.checkpointId),
    [1, 2, 3, 4, 5],
  );
  chains.written('keyed', 6, handle(6), six);
  chains.materialized('keyed', 5, handle(500));
  // Written: the next snapshot starts the new chain, the base then the changes after its barrier.
  const seven = chains.baseFor('keyed', 6, true);
  assert.equal(seven?.materialize, undefined);
  assert.deepEqual(
    seven?.chain.map((link) => [link.checkpointId, link.handle.size]),
    [
      [5, 500],
      [6, 6],
    ],
  );
  const acked = chains.written('keyed', 7, handle(7), seven);
  assert.deepEqual(acked.keyed, { ...handle(500), checkpoint: 5 }, 'the base is in the folder of the checkpoint it was taken at');
  assert.deepEqual(acked.keyedChanges, [{ ...handle(6), checkpoint: 6 }, handle(7)]);
});

test('a base beside the chain is used only by a chain that holds its barrier: not after that checkpoint is aborted, nor by a chain built before it', () => {
  const build = () => {
    const chains = new KeyedStateChains(1);
    chains.written('keyed', 1, handle(1000), undefined);
    chains.written('keyed', 2, handle(2), chains.baseFor('keyed', 1, true));
    const three = chains.baseFor('keyed', 2, true);
    assert.equal(three?.materialize, true);
    chains.materializing('keyed', 3);
    return { chains, three };
  };
  const aborted = build();
  aborted.chains.written('keyed', 3, handle(3), aborted.three);
  aborted.chains.aborted(3);
  aborted.chains.materialized('keyed', 3, handle(500));
  const after = aborted.chains.baseFor('keyed', 2, true);
  assert.deepEqual(
    after?.chain.map((link) => link.checkpointId),
    [1, 2],
  );
  assert.equal(after?.materialize, true, 'another base is taken');

  // Checkpoint 3 completes after checkpoint 4 was triggered on 2 (maxConcurrent 2): 4's chain does not hold 3's change.
  const concurrent = build();
  concurrent.chains.written('keyed', 3, handle(3), concurrent.three);
  concurrent.chains.written('keyed', 4, handle(4), concurrent.chains.baseFor('keyed', 2, true));
  concurrent.chains.materialized('keyed', 3, handle(500));
  assert.deepEqual(
    concurrent.chains.baseFor('keyed', 4, true)?.chain.map((link) => link.checkpointId),
    [1, 2, 4],
  );

  // A base that failed: another is asked for at the next barrier.
  const failed = build();
  failed.chains.written('keyed', 3, handle(3), failed.three);
  failed.chains.materializationFailed('keyed', 3);
  assert.equal(failed.chains.baseFor('keyed', 3, true)?.materialize, true);
});

test('bases beside the chain are spaced by the time the last one took; after 3 failed in a row the next snapshot is full', () => {
  const clock = { now: 0 };
  const chains = new KeyedStateChains(2, () => clock.now);
  chains.written('keyed', 1, handle(1_000_000), undefined);
  const asked: number[] = [];
  const step = (id: number, outcome?: 'written' | 'failed') => {
    clock.now = id * 1000;
    const base = chains.baseFor('keyed', id - 1, true);
    if (base?.materialize === true) {
      asked.push(id);
      chains.materializing('keyed', id);
    }
    chains.written('keyed', id, handle(base === undefined ? 1_000_000 : 1), base);
    if (outcome === 'written') chains.materialized('keyed', asked.at(-1) as number, handle(1_000_000));
    if (outcome === 'failed') chains.materializationFailed('keyed', asked.at(-1) as number);
    return base;
  };
  for (let id = 2; id <= 3; id++) step(id);
  assert.equal(step(4)?.materialize, true, 'past 2 changes: a base');
  for (let id = 5; id <= 13; id++) step(id); // the base takes 10 s (checkpoint 4 at 4 s, written at 14 s)
  step(14, 'written');
  // Written at 14 s after 10 s: the next base not before 24 s, though the new chain is long again at 17 s.
  for (let id = 15; id <= 23; id++) assert.equal(step(id)?.materialize, undefined, `checkpoint ${id}`);
  assert.equal(step(24)?.materialize, true);
  // Three bases fail in a row: the next snapshot is full.
  step(25, 'failed');
  assert.equal(step(26)?.materialize, true, 'a failed base is taken again at the next barrier');
  step(27, 'failed');
  assert.equal(step(28)?.materialize, true);
  step(29, 'failed');
  assert.equal(step(30), undefined, 'a full snapshot');
  assert.deepEqual(asked, [4, 24, 26, 28]);
});

test('a barrier that starts a chain on a written base and takes the next base: if that checkpoint aborts, the written base is used again, not the old chain', () => {
  const clock = { now: 0 };
  const chains = new KeyedStateChains(1, () => clock.now);
  chains.written('keyed', 1, handle(1_000_000), undefined);
  chains.written('keyed', 2, handle(2), chains.baseFor('keyed', 1, true));
  const three = chains.baseFor('keyed', 2, true);
  assert.equal(three?.materialize, true);
  chains.materializing('keyed', 3);
  chains.written('keyed', 3, handle(3), three);
  // Checkpoints 4 and 5 complete while the base of 3 is written.
  chains.written('keyed', 4, handle(4), chains.baseFor('keyed', 3, true));
  chains.written('keyed', 5, handle(5), chains.baseFor('keyed', 4, true));
  clock.now = 10;
  chains.materialized('keyed', 3, handle(500));
  clock.now = 100;
  // Barrier 6: the chain starts on the base of 3, and is already past 1 change: another base.
  const six = chains.baseFor('keyed', 5, true);
  assert.deepEqual(
    six?.chain.map((link) => link.checkpointId),
    [3, 4, 5],
  );
  assert.equal(six?.materialize, true);
  chains.materializing('keyed', 6);
  chains.aborted(6);
  assert.deepEqual(
    chains.baseFor('keyed', 5, true)?.chain.map((link) => link.checkpointId),
    [3, 4, 5],
    'the base of 3 still starts the chain',
  );
  chains.materializing('keyed', 7);
  chains.materializationFailed('keyed', 7);
  assert.deepEqual(
    chains.baseFor('keyed', 5, true)?.chain.map((link) => link.checkpointId),
    [3, 4, 5],
    'and after a base that failed',
  );
});
