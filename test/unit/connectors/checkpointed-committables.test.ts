import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CHECKPOINT_METADATA_VERSION } from '../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { FileSystemCheckpointStorage } from '../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { checkpointedCommittables } from '../../../src/connectors/checkpointed-committables.ts';
import { COMMITTABLE_STATE_VERSION, PENDING_COMMITTABLES_STATE } from '../../../src/connectors/two-phase-commit-sink.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { OperatorStateBackend } from '../../../src/state/operator-state-backend.ts';

/** A completed checkpoint 3 whose sink "out" (2 subtasks) holds pending committables, beside a source with other operator state. */
async function checkpointWith(folder: string, entries: { version: number; checkpointId: number; subtaskIndex: number; committable: { id: string } }[][]) {
  const storage = new FileSystemCheckpointStorage(folder);
  await storage.initialize();
  const location = storage.checkpointLocation(3);
  const sinkSubtasks = [];
  for (const [subtaskIndex, pending] of entries.entries()) {
    const backend = new OperatorStateBackend();
    backend.getUnionListState(PENDING_COMMITTABLES_STATE).update(pending);
    sinkSubtasks.push({ subtaskIndex, operator: await storage.writeState(location, 'out', subtaskIndex, 'operator', backend.snapshot()) });
  }
  const source = new OperatorStateBackend();
  source.getListState('splits').update([{ topic: 'in', partition: 0 }]);
  await storage.commitMetadata(location, {
    version: CHECKPOINT_METADATA_VERSION,
    kind: 'checkpoint',
    jobName: 'job',
    checkpointId: 3,
    triggeredAt: 1,
    completedAt: 2,
    maxParallelism: 8,
    operators: [
      {
        uid: 'in',
        name: 'source',
        parallelism: 1,
        subtasks: [{ subtaskIndex: 0, operator: await storage.writeState(location, 'in', 0, 'operator', source.snapshot()) }],
      },
      { uid: 'out', name: 'sink', parallelism: entries.length, subtasks: sinkSubtasks },
    ],
    properties: {},
  });
  return { storage, metadata: await storage.readMetadata(location.path) };
}

test("a checkpoint's committables: every subtask's pending entries of every two-phase-commit sink, nothing of other state", async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-committables-'));
  try {
    const entry = (checkpointId: number, subtaskIndex: number, id: string) => ({
      version: COMMITTABLE_STATE_VERSION,
      checkpointId,
      subtaskIndex,
      committable: { id },
    });
    const { storage, metadata } = await checkpointWith(folder, [[entry(2, 0, 'a'), entry(3, 0, 'b')], [entry(3, 1, 'c')]]);
    const found = await checkpointedCommittables<{ id: string }>(storage, metadata);
    assert.deepEqual(
      found.map((item) => [item.operatorUid, item.checkpointId, item.subtaskIndex, item.committable.id]),
      [
        ['out', 2, 0, 'a'],
        ['out', 3, 0, 'b'],
        ['out', 3, 1, 'c'],
      ],
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('committables of a newer version than this Weir reads are refused', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-committables-'));
  try {
    const { storage, metadata } = await checkpointWith(folder, [
      [{ version: COMMITTABLE_STATE_VERSION + 1, checkpointId: 3, subtaskIndex: 0, committable: { id: 'x' } }],
    ]);
    await assert.rejects(
      checkpointedCommittables(storage, metadata),
      (error: unknown) => error instanceof WeirError && error.code === 'UNSUPPORTED_STATE_VERSION',
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
