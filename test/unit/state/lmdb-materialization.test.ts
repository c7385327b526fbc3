import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import type { AsyncKeyedStateSnapshot } from '../../../src/core/state/keyed-state-backend.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import type { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { assignToKeyGroup } from '../../../src/state/key-group-range-assignment.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { isLmdbBase } from '../../../src/state/lmdb-base-format.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { assertSameState, decode, fillAll, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';
import { scratchBackends, writtenSnapshot } from './scratch-backends.ts';

/**
 * The disk backend's base written beside the chain (FLIP-158's materialization, issue 34): an
 * incremental snapshot asked to `materialize` also takes a base at its barrier, written while later
 * checkpoints go on adding changes to the old chain. The base and the changes after its barrier
 * restore the latest state, as the whole old chain does, at the same key groups (lmdb's file
 * opened) and at others (converted).
 */

const { folder, keep } = scratchBackends('lmdb-materialization');
const range = keyGroupRange(0, MAX_PARALLELISM - 1);

test('a base taken beside the chain, then the changes after its barrier, restore the same state as the whole chain', async () => {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'beside',
    dir: folder('b'),
    settings: { writeBufferEntries: 64 },
  });
  keep(() => backend.dispose());
  const heapView = backend as unknown as HeapKeyedStateBackend;
  assert.equal(backend.materializesBeside, true);
  fillAll(heapView);
  const next = random(21);
  const change = (count: number) => {
    for (let i = 0; i < count; i++) mutate(heapView, next);
  };

  const first = await writtenSnapshot(backend.snapshotAsync({ checkpointId: 1, base: undefined }));
  assert.ok(isLmdbBase(first), 'the chain starts with a base');
  backend.notifyCheckpointComplete(1);
  change(400);
  const second = backend.snapshotAsync({ checkpointId: 2, base: 1 });
  assert.equal(second.materialization, undefined, 'no base beside unless asked for');
  const two = await writtenSnapshot(second);
  backend.notifyCheckpointComplete(2);
  change(400);

  // Checkpoint 3 adds to the chain and takes a base at its barrier.
  const atThree = decode(backend.snapshot());
  const third = backend.snapshotAsync({ checkpointId: 3, base: 2, materialize: true });
  assert.deepEqual(third.delta && { base: third.delta.base }, { base: 2 }, 'the snapshot itself is still a change on the chain');
  const base = third.materialization as AsyncKeyedStateSnapshot;
  assert.ok(base !== undefined, 'a base taken at the same barrier');
  assert.equal(base.delta, undefined);
  const three = await writtenSnapshot(third);
  backend.notifyCheckpointComplete(3);
  // Changes while the base is written: checkpoint 4 adds to the old chain meanwhile.
  change(400);
  const four = await writtenSnapshot(backend.snapshotAsync({ checkpointId: 4, base: 3 }));
  backend.notifyCheckpointComplete(4);
  const materialized = await writtenSnapshot(base);
  assert.ok(isLmdbBase(materialized));
  change(400);
  const five = await writtenSnapshot(backend.snapshotAsync({ checkpointId: 5, base: 4 }));
  const atFive = decode(backend.snapshot());
  assert.throws(() => assertSameState(atFive, atThree, 'changed since'), /differences/, 'the state did change after the base');

  for (const [what, chain] of [
    ['the old chain', [first, two, three, four, five]],
    ['the base beside it and the changes after its barrier', [materialized, four, five]],
  ] as const) {
    const restored = await restoreKeyedStateBackend(
      {
        stateBackend: 'disk',
        maxParallelism: MAX_PARALLELISM,
        keyGroupRange: range,
        operatorName: 'r',
        reinterpreted: false,
        dir: folder('r'),
      },
      [chain],
    );
    keep(async () => await restored.dispose?.());
    assertSameState(decode(restored.snapshot()), atFive, `${what}, restored at the same key groups`);
  }
  const onlyBase = await restoreKeyedStateBackend(
    {
      stateBackend: 'disk',
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: range,
      operatorName: 'b',
      reinterpreted: false,
      dir: folder('o'),
    },
    [[materialized]],
  );
  keep(async () => await onlyBase.dispose?.());
  assertSameState(decode(onlyBase.snapshot()), atThree, 'the base alone is the state at its barrier');

  // Another key group range (a rescale), into the heap backend: the base converted.
  const inFirst = (key: StateKey) => assignToKeyGroup(key, MAX_PARALLELISM) === 0;
  const half = await restoreKeyedStateBackend(
    {
      stateBackend: 'heap',
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: keyGroupRange(0, 0),
      operatorName: 'h',
      reinterpreted: false,
      dir: folder('h'),
    },
    [[materialized, four, five]],
  );
  assertSameState(
    decode(half.snapshot()),
    {
      states: Object.fromEntries(Object.entries(atFive.states).map(([name, entries]) => [name, entries.filter(([key]) => inFirst(key))])),
      timers: atFive.timers.filter(([, key]) => inFirst(key)),
    },
    'key group 0 restored into the heap backend',
  );
});

test('a base taken beside a checkpoint that is aborted is given up', async () => {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'aborted',
    dir: folder('a'),
  });
  keep(() => backend.dispose());
  fillAll(backend as unknown as HeapKeyedStateBackend);
  await writtenSnapshot(backend.snapshotAsync({ checkpointId: 1, base: undefined }));
  backend.notifyCheckpointComplete(1);
  const second = backend.snapshotAsync({ checkpointId: 2, base: 1, materialize: true });
  const base = second.materialization as AsyncKeyedStateSnapshot;
  backend.notifyCheckpointAborted(2);
  await assert.rejects(writtenSnapshot(base), /./);
  assert.equal(base.done, true);
});

test('a base beside that cannot start (its folder cannot be made) is an error naming stateDir, and lets go of its barrier and its pin: later checkpoints stay changes', async () => {
  const dir = folder('c');
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: MAX_PARALLELISM,
    keyGroupRange: range,
    operatorName: 'beside',
    dir,
    settings: { writeBufferEntries: 64 },
  });
  keep(() => backend.dispose());
  const heapView = backend as unknown as HeapKeyedStateBackend;
  fillAll(heapView);
  const next = random(5);
  await writtenSnapshot(backend.snapshotAsync({ checkpointId: 1, base: undefined }));
  backend.notifyCheckpointComplete(1);
  mutate(heapView, next);
  await writtenSnapshot(backend.snapshotAsync({ checkpointId: 2, base: 1 }));
  backend.notifyCheckpointComplete(2);
  mutate(heapView, next);
  // A file where the base's copy would make its folder.
  const [store] = readdirSync(dir);
  writeFileSync(join(dir, store as string, 'base-3'), 'in the way');
  assert.throws(
    () => backend.snapshotAsync({ checkpointId: 3, base: 2, materialize: true }),
    (error: unknown) => error instanceof WeirError && error.code === 'INVALID_CONFIG' && /stateDir/.test(error.message),
  );
  // Without the pin let go, the tracker keeps every epoch after it and, past 16, makes every checkpoint full.
  let base = 2;
  for (let id = 4; id <= 24; id++) {
    mutate(heapView, next);
    const writer = backend.snapshotAsync({ checkpointId: id, base });
    assert.deepEqual(writer.delta && { base: writer.delta.base }, { base }, `checkpoint ${id} adds to ${base}`);
    await writtenSnapshot(writer);
    backend.notifyCheckpointComplete(id);
    base = id;
  }
});
