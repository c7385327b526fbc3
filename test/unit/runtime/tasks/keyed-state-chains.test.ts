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
