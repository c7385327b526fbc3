/**
 * A failover while the coordinator writes a checkpoint's metadata (issue 32, point 4): the
 * checkpoint is aborted, its write goes on and lands, and settled() — which the execution attempt
 * awaits before the job restarts (and its sinks abort what the restored checkpoint does not hold)
 * — resolves only once that write has settled and the aborted checkpoint is discarded: from then on
 * no `_metadata` of it exists, and latestCompleted is still the checkpoint before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CheckpointCoordinator, type CheckpointTaskGateway } from '../../../src/checkpoint/checkpoint-coordinator.ts';
import { CheckpointStatsTracker } from '../../../src/checkpoint/checkpoint-stats-tracker.ts';
import type { TaskId } from '../../../src/checkpoint/pending-checkpoint.ts';
import type { CheckpointLocation } from '../../../src/checkpoint/storage/checkpoint-location.ts';
import type { CheckpointMetadata } from '../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { FileSystemCheckpointStorage } from '../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import type { JobGraph } from '../../../src/graph/job-graph.ts';
import { settle, tempStorage } from '../runtime/tasks/task-test-kit.ts';

const GRAPH: JobGraph = {
  jobName: 'failover',
  vertices: [{ id: 0, nodeIds: [0], name: 'source', parallelism: 2, isSource: true, isSink: false, keyed: false }],
  edges: [],
  nodes: [{ id: 0, uid: 'source', name: 'source', kind: 'source' }],
  maxParallelism: 128,
};
const TASKS: TaskId[] = [
  { vertexId: 0, subtaskIndex: 0 },
  { vertexId: 0, subtaskIndex: 1 },
];

const gateway = (triggered: CheckpointLocation[]): CheckpointTaskGateway => ({
  triggerCheckpoint: (location) => void triggered.push(location),
  notifyCheckpointComplete: () => {},
  notifyCheckpointAborted: () => {},
  failJob: () => {},
});

/** A coordinator over `storage` (checkpoints every minute: only the test triggers), attached to a gateway that records the triggers. */
function attached(storage: FileSystemCheckpointStorage, root: string): { coordinator: CheckpointCoordinator; triggered: CheckpointLocation[] } {
  const coordinator = new CheckpointCoordinator({
    config: { interval: 60_000, mode: 'exactly-once', timeout: 10_000, minPause: 0, maxConcurrent: 1, tolerableFailures: 0, retained: 1, storage: root },
    storage,
    graph: GRAPH,
    firstCheckpointId: 1,
    stats: new CheckpointStatsTracker(),
    retryDelayMs: 1,
  });
  const triggered: CheckpointLocation[] = [];
  coordinator.attach(gateway(triggered));
  return { coordinator, triggered };
}

test('detached while a metadata write is in flight: settled() waits for the write and the discard; the checkpoint never stays restorable', async (t) => {
  const root = (await tempStorage(t, 'weir-coordinator-failover-')).root;
  let releaseWrite: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    releaseWrite = resolve;
  });
  const written: number[] = [];
  /** Metadata writes of checkpoint 2 wait for releaseWrite(), then land. */
  class HeldMetadataStorage extends FileSystemCheckpointStorage {
    override async commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
      if (location.checkpointId === 2) await held;
      await super.commitMetadata(location, metadata);
      written.push(location.checkpointId);
    }
  }
  const storage = new HeldMetadataStorage(root);
  const { coordinator, triggered } = attached(storage, root);
  const acknowledgeAll = async (location: CheckpointLocation) => {
    for (const task of TASKS) {
      const handle = await storage.writeState(location, 'source', task.subtaskIndex, 'operator', new Uint8Array([task.subtaskIndex]));
      coordinator.receiveAcknowledge(location.checkpointId, task, [{ uid: 'source', operator: handle }], 0, 1);
    }
  };

  const first = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(triggered[0] as CheckpointLocation);
  await first;
  const second = coordinator.triggerCheckpoint('checkpoint');
  second.catch(() => {});
  const location = triggered[1] as CheckpointLocation;
  await acknowledgeAll(location); // every task acknowledged: the metadata write is in flight (held)
  coordinator.detach('JOB_FAILOVER', new Error('a task failed'));
  await assert.rejects(second, /checkpoint 2 was aborted: the job failed and restarts/);

  let settled = false;
  const settling = coordinator.settled().then(() => {
    settled = true;
  });
  await settle(20);
  assert.equal(settled, false, 'settled() waits for the metadata write in flight');
  releaseWrite();
  await settling;
  // Checkpoint 2's metadata lands, or fails when the abort's discard took its folder first: either
  // way nothing of it stays restorable.
  assert.deepEqual(written.slice(0, 1), [1]);
  assert.equal(await storage.hasMetadata(location), false, 'and is discarded before settled() resolves');
  assert.equal(coordinator.latestCompleted?.checkpointId, 1, 'a restart restores checkpoint 1');
});

test('an aborted checkpoint whose metadata landed and cannot be discarded fails the job for good, naming the folder', async (t) => {
  const root = (await tempStorage(t, 'weir-coordinator-failover-')).root;
  let releaseWrite: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    releaseWrite = resolve;
  });
  let discards = 0;
  /** Checkpoint 1's metadata waits for releaseWrite(), then lands; every discard fails. */
  class StuckStorage extends FileSystemCheckpointStorage {
    override async commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
      await held;
      await super.commitMetadata(location, metadata);
    }
    override async discard(): Promise<void> {
      discards++;
      throw new Error('the store is unreachable');
    }
  }
  const storage = new StuckStorage(root);
  const { coordinator, triggered } = attached(storage, root);
  const first = coordinator.triggerCheckpoint('checkpoint');
  first.catch(() => {});
  const location = triggered[0] as CheckpointLocation;
  for (const task of TASKS) {
    const handle = await storage.writeState(location, 'source', task.subtaskIndex, 'operator', new Uint8Array([task.subtaskIndex]));
    coordinator.receiveAcknowledge(1, task, [{ uid: 'source', operator: handle }], 0, 1);
  }
  coordinator.detach('JOB_FAILOVER', new Error('a task failed'));
  releaseWrite();
  await assert.rejects(coordinator.settled(), (error: Error & { code?: string; hint?: string }) => {
    assert.equal(error.code, 'ABORTED_CHECKPOINT_NOT_DISCARDED');
    assert.match(error.message, /checkpoint 1 was aborted, but its _metadata .* could not be deleted/);
    assert.match(String(error.hint), /delete .*chk-1/);
    return true;
  });
  assert.ok(discards >= 3, `the discard was tried again (${discards} tries)`);
  assert.equal(await storage.hasMetadata(location), true, 'the metadata is still there: the job must not restart onto it');
});
