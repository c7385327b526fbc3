import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CheckpointCoordinator } from '../../../../src/checkpoint/checkpoint-coordinator.ts';
import type { CompletedCheckpoint } from '../../../../src/checkpoint/completed-checkpoint.ts';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { CommittedCheckpointRecorder } from '../../../../src/runtime/jobmaster/committed-checkpoint-recorder.ts';

/** A coordinator whose latest completed checkpoint and commit waits the test drives. */
function fakeCoordinator() {
  const waits = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  const fake = {
    latestCompleted: undefined as CompletedCheckpoint | undefined,
    whenCommitted: (checkpointId: number) => new Promise<void>((resolve, reject) => waits.set(checkpointId, { resolve, reject })),
  };
  return { fake, coordinator: fake as unknown as CheckpointCoordinator, waits };
}

async function withStorage(body: (storage: FileSystemCheckpointStorage, location: (id: number) => CheckpointLocation) => Promise<void>): Promise<void> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-recorder-'));
  try {
    const storage = new FileSystemCheckpointStorage(folder);
    await storage.initialize();
    const location = (id: number) => storage.checkpointLocation(id);
    await body(storage, location);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

const completed = (location: CheckpointLocation): CompletedCheckpoint => ({
  checkpointId: location.checkpointId,
  kind: location.kind,
  location,
  metadata: {} as CompletedCheckpoint['metadata'],
});

test('a checkpoint is recorded committed once every task acted on its completion, not before', async () => {
  await withStorage(async (storage, location) => {
    await mkdir(location(3).path, { recursive: true });
    const { fake, coordinator, waits } = fakeCoordinator();
    const warnings: string[] = [];
    const recorder = new CommittedCheckpointRecorder(storage, coordinator, (line) => warnings.push(line));
    fake.latestCompleted = completed(location(3));
    recorder.completed(3);
    await recorder.settled();
    assert.equal(await storage.isMarkedCommitted(location(3).path), false, 'not before the commits');
    waits.get(3)?.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.settled();
    assert.equal(await storage.isMarkedCommitted(location(3).path), true);
    assert.deepEqual(warnings, []);
  });
});

test('not recorded when the attempt ended before the commits, nor when a later checkpoint completed meanwhile', async () => {
  await withStorage(async (storage, location) => {
    for (const id of [4, 5, 6]) await mkdir(location(id).path, { recursive: true });
    const { fake, coordinator, waits } = fakeCoordinator();
    const recorder = new CommittedCheckpointRecorder(storage, coordinator, () => {});
    fake.latestCompleted = completed(location(4));
    recorder.completed(4);
    waits.get(4)?.reject(new Error('the attempt ended'));
    fake.latestCompleted = completed(location(5));
    recorder.completed(5);
    fake.latestCompleted = completed(location(6));
    waits.get(5)?.resolve(); // 6 completed before 5's commits were all done: 6's record covers 5
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.settled();
    assert.equal(await storage.isMarkedCommitted(location(4).path), false);
    assert.equal(await storage.isMarkedCommitted(location(5).path), false);
  });
});

test('a restored snapshot is recorded once its sinks committed it, unless it says so already; a failed write only warns', async () => {
  await withStorage(async (storage, location) => {
    await mkdir(location(7).path, { recursive: true });
    const { coordinator } = fakeCoordinator();
    const warnings: string[] = [];
    const recorder = new CommittedCheckpointRecorder(storage, coordinator, (line) => warnings.push(line));
    const restore = { checkpointId: 7, kind: 'checkpoint' as const, folder: location(7).path, maxParallelism: 8, operators: [], transactionsCommitted: false };
    recorder.committedSnapshot({ ...restore, transactionsCommitted: true });
    await recorder.settled();
    assert.equal(await storage.isMarkedCommitted(location(7).path), false, 'already recorded: nothing written');
    recorder.committedSnapshot(restore);
    await recorder.settled();
    assert.equal(await storage.isMarkedCommitted(location(7).path), true);
    // A folder that is gone (deleted meanwhile): a warning, nothing thrown.
    recorder.committedSnapshot({ ...restore, checkpointId: 9, folder: location(9).path });
    await recorder.settled();
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] as string, /could not record that the transactions of checkpoint 9 are committed .* \(a restore of it commits them again\)/);
  });
});
