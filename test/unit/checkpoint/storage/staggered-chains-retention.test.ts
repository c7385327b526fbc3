/**
 * Retention of incremental checkpoints whose subtasks start new full snapshots at different
 * checkpoints (issue 34): a folder kept only because a retained checkpoint names a file in it must
 * not stay behind as a completed checkpoint whose metadata names files retention deleted.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { type StateHandle, stateFilesOf } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../../../src/checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { metadataFor } from '../../../harness/checkpoint-metadata.ts';

async function freshStorage(t: TestContext): Promise<FileSystemCheckpointStorage> {
  const root = await mkdtemp(join(tmpdir(), 'weir-staggered-chains-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storage = new FileSystemCheckpointStorage(join(root, 'job'));
  await storage.initialize();
  return storage;
}

/**
 * Subtask 0: full at 1, changes at 2; full at 3, changes at 4. Subtask 1: full at 1; full at 2,
 * changes at 3 and 4. So 4 names 2 and 3, and 2's own metadata names 1 (subtask 0's chain).
 */
const CHAINS: Record<number, [number[], number[]]> = {
  1: [[1], [1]],
  2: [[1, 2], [2]],
  3: [[3], [2, 3]],
  4: [
    [3, 4],
    [2, 3, 4],
  ],
};

async function writeStaggeredChains(storage: CheckpointStorage): Promise<void> {
  const handles = new Map<string, StateHandle>();
  for (const id of [1, 2, 3, 4]) {
    const location = storage.checkpointLocation(id);
    const subtasks = [];
    for (const subtaskIndex of [0, 1]) {
      handles.set(`${id}/${subtaskIndex}`, await storage.writeState(location, 'sum', subtaskIndex, 'keyed', new TextEncoder().encode(`${id}/${subtaskIndex}`)));
      const named = (link: number) => {
        const handle = handles.get(`${link}/${subtaskIndex}`) as StateHandle;
        return link === id ? handle : { ...handle, checkpoint: link };
      };
      const [keyed, ...keyedChanges] = (CHAINS[id] as [number[], number[]])[subtaskIndex]!.map(named);
      subtasks.push(keyedChanges.length === 0 ? { subtaskIndex, keyed } : { subtaskIndex, keyed, keyedChanges });
    }
    await storage.commitMetadata(location, { ...metadataFor(location, [{ uid: 'sum', name: 'Sum', parallelism: 2, subtasks }]), version: 2 });
  }
}

/** Every completed checkpoint left can read every file its metadata names. */
async function assertEveryCompletedCheckpointReads(storage: CheckpointStorage): Promise<number[]> {
  const completed: number[] = [];
  for (const location of await storage.listLocations('checkpoint')) {
    if (!(await storage.hasMetadata(location))) continue;
    completed.push(location.checkpointId);
    const metadata = await storage.readMetadata(location.path);
    for (const handle of stateFilesOf(metadata)) {
      await assert.doesNotReject(
        storage.readState(location.path, handle),
        `checkpoint ${location.checkpointId} names ${handle.checkpoint ?? location.checkpointId}/${handle.path}`,
      );
    }
  }
  return completed;
}

test("subsume: a folder kept for a retained checkpoint's files stops being a completed checkpoint, so none names a deleted file", async (t) => {
  const storage = await freshStorage(t);
  await writeStaggeredChains(storage);
  // 4 and 3 retained; they name 2 (subtask 1) and 3; 1 is named by 2's metadata only.
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(2), [1]);
  assert.deepEqual(await assertEveryCompletedCheckpointReads(storage), [3, 4]);
  assert.deepEqual(
    (await storage.listLocations('checkpoint')).map((location) => location.checkpointId),
    [2, 3, 4],
  );
  assert.equal((await new CompletedCheckpointStore(storage).latest())?.checkpointId, 4);
  // One retained: 4 still names 2 and 3, so their folders stay, and 3 is no longer a completed checkpoint.
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), []);
  assert.deepEqual(await assertEveryCompletedCheckpointReads(storage), [4]);
  assert.deepEqual(
    (await storage.listLocations('checkpoint')).map((location) => location.checkpointId),
    [2, 3, 4],
  );
});

test('subsume on a storage without discardMetadata keeps such a folder whole, with what its metadata names', async (t) => {
  const storage = await freshStorage(t);
  await writeStaggeredChains(storage);
  const withoutDiscardMetadata = new Proxy(storage, {
    get(target, name) {
      if (name === 'discardMetadata') return undefined;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as CheckpointStorage;
  assert.deepEqual(await new CompletedCheckpointStore(withoutDiscardMetadata).subsume(2), []);
  assert.deepEqual(await assertEveryCompletedCheckpointReads(storage), [1, 2, 3, 4]);
});
