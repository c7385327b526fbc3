import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { PendingCheckpoint } from '../../../../src/checkpoint/pending-checkpoint.ts';
import type { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import type { JobGraph } from '../../../../src/graph/job-graph.ts';
import { findRestorePoint } from '../../../../src/runtime/jobmaster/restore-point.ts';
import { tempStorage } from '../tasks/task-test-kit.ts';

/** source (2) -> keyBy -> sum (sumParallelism). */
function graphOf(sumParallelism: number): JobGraph {
  return {
    jobName: 'test',
    maxParallelism: 128,
    nodes: [
      { id: 0, uid: 'source', name: 'source', kind: 'source' },
      { id: 1, uid: 'sum', name: 'sum', kind: 'operator' },
    ],
    vertices: [
      { id: 0, nodeIds: [0], name: 'source', parallelism: 2, isSource: true, isSink: false, keyed: false },
      { id: 1, nodeIds: [1], name: 'sum', parallelism: sumParallelism, isSource: false, isSink: false, keyed: true },
    ],
    edges: [{ id: 0, source: 0, target: 1, partitioning: 'hash', streamEdge: 0, inputIndex: 0, outputTag: undefined }],
  };
}

/** Completes checkpoint 1 of graphOf(2) in the storage, the sum's subtask 1 with records in flight when `unaligned`. */
async function checkpointIn(t: TestContext, unaligned: boolean): Promise<FileSystemCheckpointStorage> {
  const storage = await tempStorage(t);
  const graph = graphOf(2);
  const location = storage.checkpointLocation(1);
  const pending = new PendingCheckpoint({
    checkpointId: 1,
    location,
    triggeredAt: 0,
    tasks: [0, 1].flatMap((vertexId) => [0, 1].map((subtaskIndex) => ({ vertexId, subtaskIndex }))),
  });
  for (const vertexId of [0, 1]) {
    for (const subtaskIndex of [0, 1]) {
      const uid = vertexId === 0 ? 'source' : 'sum';
      const operators = [{ uid, operator: await storage.writeState(location, uid, subtaskIndex, 'operator', new Uint8Array([vertexId, subtaskIndex])) }];
      if (unaligned && vertexId === 1 && subtaskIndex === 1) {
        operators.push({ uid: 'sum#channel-state', operator: await storage.writeState(location, 'sum#channel-state', 1, 'operator', new Uint8Array([9])) });
      }
      pending.acknowledge({ vertexId, subtaskIndex }, operators);
    }
  }
  const metadata = pending.finalize(graph, 1);
  await storage.commitMetadata(location, metadata);
  return storage;
}

test('the metadata of an unaligned checkpoint lists the channel state of each task that had records in flight, and it restores at the same parallelism', async (t) => {
  const storage = await checkpointIn(t, true);
  const restore = await findRestorePoint(graphOf(2), storage, {});
  assert.ok(restore !== undefined);
  const channelState = restore.operators.find((operator) => operator.uid === 'sum#channel-state');
  assert.deepEqual(
    channelState?.subtasks.map((subtask) => subtask.subtaskIndex),
    [1],
  );
  assert.equal(channelState?.parallelism, 2);
  const metadata = await storage.readMetadata(storage.checkpointLocation(1).path);
  assert.equal(metadata.operators.find((operator) => operator.uid === 'sum#channel-state')?.name, 'in-flight records into sum');
});

test('a rescale from an unaligned checkpoint with channel state is refused with one error naming the fix (a savepoint)', async (t) => {
  const storage = await checkpointIn(t, true);
  await assert.rejects(findRestorePoint(graphOf(4), storage, {}), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'INVALID_PARALLELISM');
    assert.match(
      error.message,
      /is an unaligned checkpoint: it holds records that were in flight between tasks \(in-flight records into sum\).*\("sum" 2 -> 4\)/,
    );
    assert.match(error.hint ?? '', /take a savepoint .* then start it at the new parallelism with --from-savepoint/);
    return true;
  });
});

test('an aligned checkpoint (no channel state) still restores at another parallelism', async (t) => {
  const storage = await checkpointIn(t, false);
  const restore = await findRestorePoint(graphOf(4), storage, {});
  assert.equal(restore?.checkpointId, 1);
  assert.equal(
    restore?.operators.some((operator) => operator.uid.endsWith('#channel-state')),
    false,
  );
});
