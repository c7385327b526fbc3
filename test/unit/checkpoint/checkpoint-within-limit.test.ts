import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CheckpointCoordinator, type CheckpointTaskGateway } from '../../../src/checkpoint/checkpoint-coordinator.ts';
import { CheckpointStatsTracker } from '../../../src/checkpoint/checkpoint-stats-tracker.ts';
import type { CheckpointLocation } from '../../../src/checkpoint/storage/checkpoint-location.ts';
import type { JobGraph } from '../../../src/graph/job-graph.ts';
import { settle, tempStorage } from '../runtime/tasks/task-test-kit.ts';

/** One source task. */
const GRAPH: JobGraph = {
  jobName: 'limited',
  vertices: [{ id: 0, nodeIds: [0], name: 'source', parallelism: 1, isSource: true, isSink: true, keyed: false }],
  edges: [],
  nodes: [{ id: 0, uid: 'source', name: 'source', kind: 'source' }],
  maxParallelism: 128,
};

test("bounded input's final checkpoint waits for a free slot under maxConcurrent, as a periodic one does", async (t) => {
  const storage = await tempStorage(t, 'weir-within-limit-');
  const triggered: CheckpointLocation[] = [];
  const gateway: CheckpointTaskGateway = {
    triggerCheckpoint: (location) => triggered.push(location),
    notifyCheckpointComplete: () => {},
    notifyCheckpointAborted: () => {},
    failJob: () => {},
  };
  const coordinator = new CheckpointCoordinator({
    config: {
      interval: 60_000,
      mode: 'exactly-once',
      timeout: 10_000,
      minPause: 0,
      maxConcurrent: 1,
      tolerableFailures: 0,
      retained: 1,
      storage: storage.root,
    },
    storage,
    graph: GRAPH,
    firstCheckpointId: 1,
    stats: new CheckpointStatsTracker(),
  });
  coordinator.attach(gateway);
  t.after(async () => {
    coordinator.detach('CHECKPOINT_COORDINATOR_SHUTDOWN', new Error('test over'));
    await coordinator.settled();
  });

  const periodic = coordinator.triggerCheckpoint('checkpoint');
  const final = coordinator.triggerCheckpointWithinLimit();
  await settle();
  assert.deepEqual(
    triggered.map((location) => location.checkpointId),
    [1],
    'the final checkpoint waits while checkpoint 1 is pending',
  );

  const acknowledge = async (location: CheckpointLocation) => {
    const handle = await storage.writeState(location, 'source', 0, 'operator', new Uint8Array([1]));
    coordinator.receiveAcknowledge(location.checkpointId, { vertexId: 0, subtaskIndex: 0 }, [{ uid: 'source', operator: handle }], 0, 1);
  };
  await acknowledge(triggered[0] as CheckpointLocation);
  assert.equal((await periodic).checkpointId, 1);
  await settle();
  assert.deepEqual(
    triggered.map((location) => location.checkpointId),
    [1, 2],
    'then it is triggered',
  );
  await acknowledge(triggered[1] as CheckpointLocation);
  assert.equal((await final).checkpointId, 2);

  // Waiting when the tasks stop running: it is refused as any trigger then is.
  const blocking = coordinator.triggerCheckpoint('checkpoint');
  const refused = coordinator.triggerCheckpointWithinLimit();
  coordinator.detach('CHECKPOINT_COORDINATOR_SHUTDOWN', new Error('stopping'));
  await assert.rejects(refused, /the job's tasks are not running/);
  await assert.rejects(blocking);
});
