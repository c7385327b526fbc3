import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointableKeyedStateBackend } from '../../../src/core/state/keyed-state-backend.ts';
import type { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { restoreKeyedStateBackend } from '../../../src/state/keyed-state-backend-restore.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { assertSameState, backendWith, decode, fillAll, MAX_PARALLELISM, mutate, random } from './keyed-state-fixtures.ts';
import { scratchBackends, writtenSnapshot } from './scratch-backends.ts';

/**
 * Incremental checkpoints go on after a restore (issue 34): a backend restored from a checkpoint's
 * chain at the same key groups tracks its changes from the restore on (trackChangesSince), so the
 * first checkpoint after it writes only what changed since the restored checkpoint, not a full
 * snapshot (at tens of millions of keys, a base of minutes after every restart). The restored chain
 * and that change restore the state, for both backends.
 */

const { folder, keep } = scratchBackends('incremental-restore');
const range = keyGroupRange(0, MAX_PARALLELISM - 1);

async function restoredFrom(kind: 'heap' | 'disk', chain: readonly Uint8Array[]): Promise<CheckpointableKeyedStateBackend> {
  const backend = await restoreKeyedStateBackend(
    { stateBackend: kind, maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: kind, reinterpreted: false, dir: folder('r') },
    [chain],
  );
  keep(async () => await backend.dispose?.());
  return backend;
}

for (const kind of ['heap', 'disk'] as const) {
  test(`${kind} backend: after a restore from a chain, the first checkpoint adds to it; the chain and that change restore the state`, async () => {
    const original: CheckpointableKeyedStateBackend =
      kind === 'heap'
        ? backendWith()
        : new LmdbKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: 'o', dir: folder('o') });
    keep(async () => await original.dispose?.());
    fillAll(original as HeapKeyedStateBackend);
    const next = random(kind === 'heap' ? 31 : 32);
    const change = (backend: CheckpointableKeyedStateBackend, count: number) => {
      for (let i = 0; i < count; i++) mutate(backend as HeapKeyedStateBackend, next);
    };
    const full = await writtenSnapshot(original.snapshotAsync({ checkpointId: 1, base: undefined }));
    original.notifyCheckpointComplete?.(1);
    change(original, 300);
    const two = await writtenSnapshot(original.snapshotAsync({ checkpointId: 2, base: 1 }));

    // Restored from checkpoint 2 (its chain), changes tracked from the restore on.
    const restored = await restoredFrom(kind, [full, two]);
    restored.trackChangesSince?.(2);
    change(restored, 300);
    const first = restored.snapshotAsync({ checkpointId: 3, base: 2 });
    assert.deepEqual(first.delta && { base: first.delta.base }, { base: 2 }, 'the first checkpoint after the restore is a change on it');
    const three = await writtenSnapshot(first);
    const atThree = decode(restored.snapshot());
    assert.ok(three.byteLength < full.byteLength / 2, `the change (${three.byteLength} bytes) is not a full snapshot (${full.byteLength})`);
    assertSameState(decode((await restoredFrom(kind, [full, two, three])).snapshot()), atThree, 'the chain across the restore');

    // Without the tracking, the backend cannot add to the restored checkpoint: a full snapshot, as before.
    const untracked = await restoredFrom(kind, [full, two]);
    const fullAgain = untracked.snapshotAsync({ checkpointId: 3, base: 2 });
    assert.equal(fullAgain.delta, undefined);
    await writtenSnapshot(fullAgain);
  });
}
