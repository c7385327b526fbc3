// A restore is named for what it restores (issue 33, point 5): `weir run --from-savepoint <folder>`
// logs 'starting job "x" from savepoint N', never "from checkpoint N".
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import type { JobGraph } from '../../../../src/graph/job-graph.ts';
import { restoreName } from '../../../../src/runtime/jobmaster/restore-name.ts';
import { findRestorePoint, restoreAfterFailure } from '../../../../src/runtime/jobmaster/restore-point.ts';

const graph: JobGraph = {
  jobName: 'test',
  maxParallelism: 128,
  nodes: [{ id: 0, uid: 'source', name: 'source', kind: 'source' }],
  vertices: [{ id: 0, nodeIds: [0], name: 'source', parallelism: 1, isSource: true, isSink: false, keyed: false }],
  edges: [],
};

async function storageIn(t: TestContext): Promise<FileSystemCheckpointStorage> {
  const root = await mkdtemp(join(tmpdir(), 'weir-restore-name-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storage = new FileSystemCheckpointStorage(join(root, 'job'));
  await storage.initialize();
  return storage;
}

/** Completes a snapshot of `graph` at `location` (the source's state, one subtask). */
async function complete(storage: FileSystemCheckpointStorage, location: CheckpointLocation) {
  const handle = await storage.writeState(location, 'source', 0, 'operator', new Uint8Array([1]));
  const metadata = {
    version: 1 as const,
    kind: location.kind,
    jobName: 'test',
    checkpointId: location.checkpointId,
    triggeredAt: 0,
    completedAt: 1,
    maxParallelism: 128,
    operators: [{ uid: 'source', name: 'source', parallelism: 1, subtasks: [{ subtaskIndex: 0, operator: handle }] }],
    properties: {},
  };
  await storage.commitMetadata(location, metadata);
  return { checkpointId: location.checkpointId, kind: location.kind, location, metadata };
}

test('--from-savepoint <savepoint folder> restores "savepoint N"; a checkpoint folder given there stays "checkpoint N"', async (t) => {
  const storage = await storageIn(t);
  await complete(storage, storage.checkpointLocation(3));
  const savepoint = storage.savepointLocation(4);
  await complete(storage, savepoint);
  const fromSavepoint = await findRestorePoint(graph, storage, { fromSavepoint: savepoint.path });
  assert.ok(fromSavepoint !== undefined);
  assert.equal(restoreName(fromSavepoint), 'savepoint 4');
  const fromCheckpoint = await findRestorePoint(graph, storage, { fromSavepoint: storage.checkpointLocation(3).path });
  assert.ok(fromCheckpoint !== undefined);
  assert.equal(restoreName(fromCheckpoint), 'checkpoint 3');
});

test('a start from the latest snapshot, and a restart after a failure, name a savepoint as a savepoint', async (t) => {
  const storage = await storageIn(t);
  await complete(storage, storage.checkpointLocation(3));
  const savepoint = await complete(storage, storage.savepointLocation(4));
  const latest = await findRestorePoint(graph, storage, {});
  assert.ok(latest !== undefined);
  assert.equal(restoreName(latest), 'savepoint 4');
  assert.equal(restoreName(restoreAfterFailure(savepoint)), 'savepoint 4');
  const checkpoint = await complete(storage, storage.checkpointLocation(5));
  assert.equal(restoreName(restoreAfterFailure(checkpoint)), 'checkpoint 5');
  assert.equal(restoreName({ checkpointId: 6, folder: '/x', maxParallelism: 128, operators: [], transactionsCommitted: false }), 'checkpoint 6');
});
