import assert from 'node:assert/strict';
import { stateFilesOf } from '../../src/checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../src/checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { metadataFor } from './checkpoint-metadata.ts';

/**
 * Incremental checkpoints on any checkpoint storage (the chains of writeChains). A handle naming an earlier checkpoint
 * reads from that one's folder; with one checkpoint kept, subsume keeps every folder the kept one
 * names, and deletes them once no kept checkpoint does.
 */
export async function assertIncrementalRetention(storage: CheckpointStorage): Promise<void> {
  await writeChains(storage, async (id) => {
    if (id !== 3) return;
    const location = storage.checkpointLocation(3);
    const read = await storage.readMetadata(location.path);
    const files = [read.operators[0]!.subtasks[0]!.keyed!, ...read.operators[0]!.subtasks[0]!.keyedChanges!];
    const texts = await Promise.all(files.map(async (handle) => new TextDecoder().decode(await storage.readState(location.path, handle))));
    assert.deepEqual(texts, ['state of 1', 'state of 2', 'state of 3']);
    // One kept checkpoint: 3 names 1 and 2, so nothing goes.
    assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), []);
  });
  // 5 names 4 only: 1, 2 and 3 go.
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), [1, 2, 3]);
  assert.deepEqual(
    (await storage.listLocations('checkpoint')).map((location) => location.checkpointId),
    [4, 5],
  );
}

/**
 * Retention stopped between two deletions (a crash): every completed checkpoint left still has all
 * its files, since the newest go first (3, which names 1 and 2, before them).
 */
export async function assertInterruptedRetentionKeepsChains(storage: CheckpointStorage): Promise<void> {
  await writeChains(storage, async () => {});
  let discards = 0;
  const failing = new Proxy(storage, {
    get(target, name) {
      if (name !== 'discard') {
        const value = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (location: Parameters<CheckpointStorage['discard']>[0]) => {
        if (++discards > 1) throw new Error('the process died here');
        await target.discard(location);
      };
    },
  });
  await assert.rejects(new CompletedCheckpointStore(failing).subsume(1), /the process died here/);
  for (const location of await storage.listLocations('checkpoint')) {
    if (!(await storage.hasMetadata(location))) continue;
    const metadata = await storage.readMetadata(location.path);
    for (const handle of stateFilesOf(metadata)) await storage.readState(location.path, handle);
  }
}

/** Checkpoint 1 full, 2 and 3 changes on it (3 names 1's and 2's files), 4 full again, 5 changes on 4; `after(id)` once each is complete. */
async function writeChains(storage: CheckpointStorage, after: (id: number) => Promise<void>): Promise<void> {
  const state = (id: number) => new TextEncoder().encode(`state of ${id}`);
  const handles = new Map<number, Awaited<ReturnType<CheckpointStorage['writeState']>>>();
  const chains: Record<number, number[]> = { 1: [1], 2: [1, 2], 3: [1, 2, 3], 4: [4], 5: [4, 5] };
  for (const id of [1, 2, 3, 4, 5]) {
    const location = storage.checkpointLocation(id);
    handles.set(id, await storage.writeState(location, 'map', 0, 'keyed', state(id)));
    const named = (link: number) => (link === id ? handles.get(link)! : { ...handles.get(link)!, checkpoint: link });
    const [first, ...changes] = (chains[id] as number[]).map(named);
    const subtask = changes.length === 0 ? { subtaskIndex: 0, keyed: first } : { subtaskIndex: 0, keyed: first, keyedChanges: changes };
    await storage.commitMetadata(location, { ...metadataFor(location, [{ uid: 'map', name: 'Map', parallelism: 1, subtasks: [subtask] }]), version: 2 });
    await after(id);
  }
}
