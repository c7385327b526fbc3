import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { CheckpointCoordinator, type CheckpointTaskGateway } from '../../../src/checkpoint/checkpoint-coordinator.ts';
import { CheckpointStatsTracker } from '../../../src/checkpoint/checkpoint-stats-tracker.ts';
import type { CompletedCheckpoint } from '../../../src/checkpoint/completed-checkpoint.ts';
import type { OperatorSubtaskState } from '../../../src/checkpoint/operator-subtask-state.ts';
import type { TaskId } from '../../../src/checkpoint/pending-checkpoint.ts';
import type { StopMode } from '../../../src/checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../../src/checkpoint/storage/checkpoint-location.ts';
import type { CheckpointMetadata, StateHandle } from '../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { FileSystemCheckpointStorage } from '../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import type { CheckpointingConfig } from '../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import type { JobGraph } from '../../../src/graph/job-graph.ts';
import { settle, sleep, tempStorage, until } from '../runtime/tasks/task-test-kit.ts';

/** A source vertex of parallelism 2 and a sink vertex of parallelism 1: three tasks. */
const GRAPH: JobGraph = {
  jobName: 'coordinated',
  vertices: [
    { id: 0, nodeIds: [0], name: 'source', parallelism: 2, isSource: true, isSink: false, keyed: false },
    { id: 1, nodeIds: [1], name: 'sink', parallelism: 1, isSource: false, isSink: true, keyed: false },
  ],
  edges: [{ id: 0, source: 0, target: 1, partitioning: 'rebalance', streamEdge: 0, inputIndex: 0, outputTag: undefined }],
  nodes: [
    { id: 0, uid: 'source', name: 'source', kind: 'source' },
    { id: 1, uid: 'sink', name: 'sink', kind: 'sink' },
  ],
  maxParallelism: 128,
};

const SOURCE_0: TaskId = { vertexId: 0, subtaskIndex: 0 };
const SOURCE_1: TaskId = { vertexId: 0, subtaskIndex: 1 };
const SINK: TaskId = { vertexId: 1, subtaskIndex: 0 };
const TASKS = [SOURCE_0, SOURCE_1, SINK];

class RecordingGateway implements CheckpointTaskGateway {
  readonly triggered: { location: CheckpointLocation; stop: StopMode | undefined }[] = [];
  readonly completed: number[] = [];
  readonly aborted: number[] = [];
  readonly failures: WeirError[] = [];

  triggerCheckpoint(location: CheckpointLocation, stop: StopMode | undefined): void {
    this.triggered.push({ location, stop });
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.completed.push(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.aborted.push(checkpointId);
  }

  failJob(error: WeirError): void {
    this.failures.push(error);
  }

  get triggeredIds(): number[] {
    return this.triggered.map((entry) => entry.location.checkpointId);
  }
}

interface Setup {
  config?: Partial<CheckpointingConfig>;
  firstCheckpointId?: number;
  storage?: FileSystemCheckpointStorage;
  attach?: boolean;
}

async function coordinatorWith(t: TestContext, setup: Setup = {}) {
  const storage = setup.storage ?? (await tempStorage(t, 'weir-coordinator-'));
  const config: CheckpointingConfig = {
    interval: 60_000,
    mode: 'exactly-once',
    timeout: 2_000,
    minPause: 0,
    maxConcurrent: 1,
    tolerableFailures: 0,
    retained: 1,
    storage: storage.root,
    ...setup.config,
  };
  const stats = new CheckpointStatsTracker();
  const log: string[] = [];
  const coordinator = new CheckpointCoordinator({
    config,
    storage,
    graph: GRAPH,
    firstCheckpointId: setup.firstCheckpointId ?? 1,
    stats,
    log: (line) => log.push(line),
  });
  const gateway = new RecordingGateway();
  if (setup.attach ?? true) coordinator.attach(gateway);
  t.after(async () => {
    coordinator.detach('CHECKPOINT_COORDINATOR_SHUTDOWN', new Error('test over'));
    await coordinator.settled();
  });
  return { coordinator, gateway, storage, stats, config, log };
}

/** Acknowledges checkpoint `id` as `task` with a real state file of `bytes` bytes. */
async function acknowledge(
  coordinator: CheckpointCoordinator,
  storage: FileSystemCheckpointStorage,
  location: CheckpointLocation,
  task: TaskId,
  options: { bytes?: number; alignmentMs?: number } = {},
): Promise<void> {
  const bytes = options.bytes ?? 8;
  const uid = task.vertexId === 0 ? 'source' : 'sink';
  const handle = await storage.writeState(location, uid, task.subtaskIndex, 'operator', new Uint8Array(bytes).fill(task.subtaskIndex + 1));
  const operators: OperatorSubtaskState[] = [{ uid, operator: handle }];
  coordinator.receiveAcknowledge(location.checkpointId, task, operators, options.alignmentMs ?? 0, bytes);
}

async function acknowledgeAll(coordinator: CheckpointCoordinator, storage: FileSystemCheckpointStorage, location: CheckpointLocation): Promise<void> {
  for (const task of TASKS) await acknowledge(coordinator, storage, location, task);
}

function rejectsWith(code: string, message?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, code);
    if (message !== undefined) assert.match(error.message, message);
    return true;
  };
}

/** Whether a promise has settled by now. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await settle();
  return settled;
}

function lastLocation(gateway: RecordingGateway): CheckpointLocation {
  const entry = gateway.triggered.at(-1);
  assert.ok(entry !== undefined, 'a trigger reached the gateway');
  return entry.location;
}

test('triggering sends the location to the gateway, with rising ids from firstCheckpointId', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { firstCheckpointId: 5, config: { maxConcurrent: 3 } });
  const pending = [
    coordinator.triggerCheckpoint('checkpoint'),
    coordinator.triggerCheckpoint('checkpoint'),
    coordinator.triggerCheckpoint('savepoint', 'drain'),
  ];
  for (const promise of pending) promise.catch(() => {});
  assert.deepEqual(gateway.triggeredIds, [5, 6, 7]);
  assert.deepEqual(gateway.triggered[0], { location: storage.checkpointLocation(5), stop: undefined });
  assert.equal(gateway.triggered[2]?.location.kind, 'savepoint');
  assert.equal(gateway.triggered[2]?.stop, 'drain');
  assert.equal(coordinator.pendingCount, 3);
});

test('a checkpoint completes only once every task acknowledged (duplicates ignored): metadata, gateway and stats say so', async (t) => {
  const { coordinator, gateway, storage, stats } = await coordinatorWith(t);
  const completion = coordinator.triggerCheckpoint('checkpoint');
  const location = lastLocation(gateway);
  await acknowledge(coordinator, storage, location, SOURCE_0, { bytes: 10, alignmentMs: 3 });
  coordinator.receiveAcknowledge(location.checkpointId, SOURCE_0, [], 999, 1000);
  await acknowledge(coordinator, storage, location, SINK, { bytes: 30, alignmentMs: 12 });
  await sleep(10);
  assert.equal(await isSettled(completion), false, 'source 2/2 has not acknowledged');
  assert.equal(await storage.hasMetadata(location), false);
  assert.deepEqual(gateway.completed, []);

  await acknowledge(coordinator, storage, location, SOURCE_1, { bytes: 20, alignmentMs: 5 });
  const completed = await completion;
  assert.equal(completed.checkpointId, 1);
  assert.equal(completed.kind, 'checkpoint');
  assert.deepEqual(completed.location, location);
  const metadata = await storage.readMetadata(location.path);
  assert.equal(metadata.checkpointId, 1);
  assert.equal(metadata.jobName, 'coordinated');
  assert.deepEqual(
    metadata.operators.map((operator) => [operator.uid, operator.parallelism, operator.subtasks.map((subtask) => subtask.subtaskIndex)]),
    [
      ['source', 2, [0, 1]],
      ['sink', 1, [0]],
    ],
  );
  assert.deepEqual(new Uint8Array(await storage.readState(location, metadata.operators[0]?.subtasks[1]?.operator as StateHandle)), new Uint8Array(20).fill(2));
  assert.deepEqual(gateway.completed, [1]);
  assert.equal(coordinator.pendingCount, 0);
  assert.equal(coordinator.latestCompleted?.checkpointId, 1);
  const [row] = stats.history();
  assert.equal(row?.status, 'completed');
  assert.equal(row.bytes, 60, 'the duplicate acknowledgement is not counted');
  assert.equal(row.alignmentMs, 12);
  assert.ok(row.durationMs !== undefined && row.durationMs >= 0);
});

test('triggerCheckpoint before attach() rejects with JOB_NOT_RUNNING', async (t) => {
  const { coordinator } = await coordinatorWith(t, { attach: false });
  await assert.rejects(coordinator.triggerCheckpoint('savepoint'), rejectsWith('JOB_NOT_RUNNING', /savepoint/));
  assert.equal(coordinator.pendingCount, 0);
});

test('a decline aborts the checkpoint: the gateway hears of it, the promise rejects with CHECKPOINT_ABORTED and the location is discarded', async (t) => {
  const { coordinator, gateway, storage, stats } = await coordinatorWith(t);
  const completion = coordinator.triggerCheckpoint('checkpoint');
  const location = lastLocation(gateway);
  await acknowledge(coordinator, storage, location, SOURCE_0);
  coordinator.receiveDecline(location.checkpointId, SOURCE_1, { reason: 'CHECKPOINT_DECLINED', message: 'snapshot failed' });
  await assert.rejects(completion, rejectsWith('CHECKPOINT_ABORTED', /checkpoint 1 was aborted: declined by source \(2\/2\): snapshot failed/));
  assert.deepEqual(gateway.aborted, [1]);
  assert.equal(coordinator.pendingCount, 0);
  // The discard of the aborted location runs first (a late task's state write racing it is that task's own decline, not this test's).
  await coordinator.settled();
  await acknowledge(coordinator, storage, location, SOURCE_1);
  await acknowledge(coordinator, storage, location, SINK);
  await coordinator.settled();
  assert.deepEqual(gateway.completed, [], 'late acknowledgements complete nothing');
  assert.equal(coordinator.latestCompleted, undefined);
  assert.equal(stats.history()[0]?.status, 'aborted');
  assert.equal(stats.history()[0]?.failure?.reason, 'CHECKPOINT_DECLINED');
});

test('the location of an aborted checkpoint is gone once settled()', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t);
  coordinator.triggerCheckpoint('checkpoint').catch(() => {});
  const location = lastLocation(gateway);
  await acknowledge(coordinator, storage, location, SOURCE_0);
  assert.deepEqual(
    (await storage.listLocations('checkpoint')).map((entry) => entry.checkpointId),
    [1],
  );
  coordinator.receiveDecline(1, SINK, { reason: 'CHECKPOINT_DECLINED', message: 'no' });
  await coordinator.settled();
  assert.deepEqual(await storage.listLocations('checkpoint'), []);
});

test('a checkpoint not completed within the timeout expires, naming the tasks that did not acknowledge', async (t) => {
  const { coordinator, gateway, storage, stats } = await coordinatorWith(t, { config: { timeout: 30, tolerableFailures: 5 } });
  // The test moves time, so a slow machine cannot expire the checkpoint before the first acknowledgement.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const completion = coordinator.triggerCheckpoint('checkpoint');
  completion.catch(() => {});
  await acknowledge(coordinator, storage, lastLocation(gateway), SOURCE_0);
  t.mock.timers.tick(30);
  await assert.rejects(completion, (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'CHECKPOINT_ABORTED');
    assert.match(error.message, /checkpointing\.timeout \(30 ms\)/);
    assert.match(error.message, /no acknowledgement from source \(2\/2\), sink \(1\/1\)$/);
    assert.doesNotMatch(error.message, /source \(1\/2\)/);
    return true;
  });
  assert.deepEqual(gateway.aborted, [1]);
  assert.equal(stats.history()[0]?.failure?.reason, 'CHECKPOINT_EXPIRED');
  assert.deepEqual(gateway.failures, [], 'one failure is within tolerableFailures 5');
});

for (const reason of ['CHECKPOINT_EXPIRED', 'CHECKPOINT_DECLINED', 'CHECKPOINT_ASYNC_EXCEPTION'] as const) {
  test(`with tolerableFailures 0 the first ${reason} of a checkpoint fails the job with TOO_MANY_CHECKPOINT_FAILURES`, async (t) => {
    const { coordinator, gateway } = await coordinatorWith(t, { config: { timeout: reason === 'CHECKPOINT_EXPIRED' ? 20 : 2_000 } });
    const completion = coordinator.triggerCheckpoint('checkpoint');
    if (reason !== 'CHECKPOINT_EXPIRED') coordinator.receiveDecline(1, SINK, { reason, message: 'it broke' });
    await assert.rejects(completion, rejectsWith('CHECKPOINT_ABORTED'));
    assert.equal(gateway.failures.length, 1);
    assert.equal(gateway.failures[0]?.code, 'TOO_MANY_CHECKPOINT_FAILURES');
    assert.match(gateway.failures[0]?.message ?? '', /1 checkpoints failed in a row, more than checkpointing\.tolerableFailures \(0\)/);
  });
}

test('a decline because a newer barrier overtook the alignment does not count as a failure', async (t) => {
  const { coordinator, gateway } = await coordinatorWith(t);
  const completion = coordinator.triggerCheckpoint('checkpoint');
  coordinator.receiveDecline(1, SINK, { reason: 'CHECKPOINT_DECLINED_SUBSUMED', message: 'barrier 2 arrived' });
  await assert.rejects(completion, rejectsWith('CHECKPOINT_ABORTED'));
  assert.deepEqual(gateway.aborted, [1]);
  assert.deepEqual(gateway.failures, []);
});

test("a savepoint's failure does not count toward tolerableFailures", async (t) => {
  const { coordinator, gateway } = await coordinatorWith(t);
  const savepoint = coordinator.triggerCheckpoint('savepoint');
  coordinator.receiveDecline(1, SOURCE_0, { reason: 'CHECKPOINT_DECLINED', message: 'no' });
  await assert.rejects(savepoint, rejectsWith('CHECKPOINT_ABORTED', /^savepoint 1 was aborted/));
  assert.deepEqual(gateway.failures, []);
});

test('a completed checkpoint resets the count of failures in a row', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { tolerableFailures: 1 } });
  const decline = async () => {
    const completion = coordinator.triggerCheckpoint('checkpoint');
    coordinator.receiveDecline(lastLocation(gateway).checkpointId, SINK, { reason: 'CHECKPOINT_DECLINED', message: 'no' });
    await assert.rejects(completion);
  };
  await decline();
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await completion;
  await decline();
  assert.equal(gateway.failures.length, 0, 'decline, complete, decline: never two in a row');
  await decline();
  assert.equal(gateway.failures.length, 1);
  assert.match(gateway.failures[0]?.message ?? '', /^2 checkpoints failed in a row/);
});

test('a metadata write that fails aborts the checkpoint with FINALIZE_CHECKPOINT_FAILURE, which counts', async (t) => {
  class FailingMetadataStorage extends FileSystemCheckpointStorage {
    override commitMetadata(): Promise<void> {
      return Promise.reject(new Error('read-only file system'));
    }
  }
  const storage = new FailingMetadataStorage((await tempStorage(t)).root);
  const { coordinator, gateway, stats } = await coordinatorWith(t, { storage });
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await assert.rejects(completion, rejectsWith('CHECKPOINT_ABORTED', /writing its metadata failed: read-only file system/));
  assert.equal(stats.history()[0]?.failure?.reason, 'FINALIZE_CHECKPOINT_FAILURE');
  assert.deepEqual(gateway.completed, []);
  assert.equal(gateway.failures[0]?.code, 'TOO_MANY_CHECKPOINT_FAILURES');
});

test('completing checkpoint 2 subsumes pending checkpoint 1 (CHECKPOINT_SUBSUMED, not counted as a failure)', async (t) => {
  const { coordinator, gateway, storage, stats } = await coordinatorWith(t, { config: { maxConcurrent: 2 } });
  const first = coordinator.triggerCheckpoint('checkpoint');
  const second = coordinator.triggerCheckpoint('checkpoint');
  const [one, two] = gateway.triggered.map((entry) => entry.location) as [CheckpointLocation, CheckpointLocation];
  await acknowledge(coordinator, storage, one, SOURCE_0);
  await acknowledgeAll(coordinator, storage, two);
  assert.equal((await second).checkpointId, 2);
  await assert.rejects(first, rejectsWith('CHECKPOINT_ABORTED', /subsumed by checkpoint 2/));
  assert.deepEqual(gateway.aborted, [1]);
  assert.deepEqual(gateway.completed, [2]);
  assert.deepEqual(gateway.failures, []);
  assert.equal(stats.history()[0]?.failure?.reason, 'CHECKPOINT_SUBSUMED');
  await coordinator.settled();
  assert.deepEqual(
    (await storage.listLocations('checkpoint')).map((entry) => entry.checkpointId),
    [2],
  );
});

test('a completed checkpoint does not subsume a pending savepoint', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { maxConcurrent: 2 } });
  const savepoint = coordinator.triggerCheckpoint('savepoint');
  const checkpoint = coordinator.triggerCheckpoint('checkpoint');
  const [one, two] = gateway.triggered.map((entry) => entry.location) as [CheckpointLocation, CheckpointLocation];
  await acknowledgeAll(coordinator, storage, two);
  await checkpoint;
  assert.equal(coordinator.pendingCount, 1);
  await acknowledgeAll(coordinator, storage, one);
  assert.equal((await savepoint).kind, 'savepoint');
});

test('latestCompleted is the newest completed checkpoint or savepoint, whatever the order they complete in', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { maxConcurrent: 2 } });
  const take = async (kind: 'checkpoint' | 'savepoint'): Promise<CompletedCheckpoint> => {
    const completion = coordinator.triggerCheckpoint(kind);
    await acknowledgeAll(coordinator, storage, lastLocation(gateway));
    return completion;
  };
  await take('checkpoint');
  await take('savepoint');
  assert.equal(coordinator.latestCompleted?.checkpointId, 2);
  assert.equal(coordinator.latestCompleted?.kind, 'savepoint');
  await take('checkpoint');
  assert.equal(coordinator.latestCompleted?.checkpointId, 3);

  const savepoint = coordinator.triggerCheckpoint('savepoint');
  const savepointLocation = lastLocation(gateway);
  await take('checkpoint');
  assert.equal(coordinator.latestCompleted?.checkpointId, 5);
  await acknowledgeAll(coordinator, storage, savepointLocation);
  assert.equal((await savepoint).checkpointId, 4);
  assert.equal(coordinator.latestCompleted?.checkpointId, 5, 'an older savepoint completing later does not replace it');
});

test('whenCommitted resolves only once every task has acted on the completion', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t);
  await assert.rejects(coordinator.whenCommitted(1), rejectsWith('CHECKPOINT_NOT_TRACKED'));
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await completion;
  const committed = coordinator.whenCommitted(1);
  coordinator.receiveNotified(1, SOURCE_0);
  coordinator.receiveNotified(1, SOURCE_0);
  coordinator.receiveNotified(1, SINK);
  assert.equal(await isSettled(committed), false, 'source 2/2 has not acted on it');
  coordinator.receiveNotified(1, SOURCE_1);
  await committed;
  await coordinator.whenCommitted(1);
});

test('detach() rejects the waiters for commits and aborts the pending checkpoints', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { maxConcurrent: 2 } });
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await completion;
  const committed = coordinator.whenCommitted(1);
  const pending = coordinator.triggerCheckpoint('checkpoint');
  const failover = new Error('a task failed');
  coordinator.detach('JOB_FAILOVER', failover);
  await assert.rejects(committed, (error: unknown) => error === failover);
  await assert.rejects(pending, rejectsWith('CHECKPOINT_ABORTED', /the job failed and restarts/));
  assert.deepEqual(gateway.aborted, [2]);
  assert.deepEqual(gateway.failures, []);
  assert.equal(coordinator.pendingCount, 0);
  await assert.rejects(coordinator.triggerCheckpoint('checkpoint'), rejectsWith('JOB_NOT_RUNNING'));
});

test('ids keep rising across detach() and attach() (a restart), and the new attempt gets the triggers', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t);
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await completion;
  coordinator.triggerCheckpoint('checkpoint').catch(() => {});
  coordinator.detach('JOB_FAILOVER', new Error('restart'));
  const next = new RecordingGateway();
  coordinator.attach(next);
  const restarted = coordinator.triggerCheckpoint('checkpoint');
  assert.deepEqual(next.triggeredIds, [3]);
  assert.deepEqual(gateway.triggeredIds, [1, 2]);
  await acknowledgeAll(coordinator, storage, lastLocation(next));
  assert.equal((await restarted).checkpointId, 3);
  assert.deepEqual(next.completed, [3]);
  assert.equal(coordinator.latestCompleted?.checkpointId, 3);
});

test('the scheduler triggers on the interval, never more than maxConcurrent at once, and stops when told', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { interval: 20, maxConcurrent: 1 } });
  coordinator.startCheckpointScheduler();
  await until(() => gateway.triggered.length === 1, 'the first periodic trigger', 1000);
  await sleep(60);
  assert.equal(gateway.triggered.length, 1, 'checkpoint 1 is still pending');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await until(() => gateway.triggered.length === 2, 'the next periodic trigger', 1000);
  assert.deepEqual(gateway.completed, [1]);
  coordinator.stopCheckpointScheduler();
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await until(() => gateway.completed.length === 2, 'checkpoint 2 to complete');
  await sleep(60);
  assert.deepEqual(gateway.triggeredIds, [1, 2]);
});

test('minPause keeps the next periodic trigger away from the end of the last checkpoint', async (t) => {
  const { coordinator, gateway, storage } = await coordinatorWith(t, { config: { interval: 5, minPause: 80 } });
  coordinator.startCheckpointScheduler();
  await until(() => gateway.triggered.length === 1, 'the first periodic trigger', 1000);
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await until(() => gateway.completed.length === 1, 'checkpoint 1 to complete');
  const completedAt = Date.now();
  await until(() => gateway.triggered.length === 2, 'the next periodic trigger', 1000);
  assert.ok(Date.now() - completedAt >= 60, `the next trigger came ${Date.now() - completedAt} ms after the completion`);
});

/** A storage whose metadata writes wait for `release()` and then fail with `message`. */
async function slowFailingMetadataStorage(t: TestContext, message: string): Promise<{ storage: FileSystemCheckpointStorage; release: () => void }> {
  let release: () => void = () => {};
  const written = new Promise<void>((resolve) => {
    release = resolve;
  });
  class SlowFailingMetadataStorage extends FileSystemCheckpointStorage {
    override async commitMetadata(_location: CheckpointLocation, _metadata: CheckpointMetadata): Promise<void> {
      await written;
      throw new Error(message);
    }
  }
  return { storage: new SlowFailingMetadataStorage((await tempStorage(t)).root), release };
}

test('a checkpoint that expired while its metadata was written, whose write then fails, does not fail the job', async (t) => {
  const { storage, release } = await slowFailingMetadataStorage(t, 'ENOENT: the folder was discarded meanwhile');
  const { coordinator, gateway } = await coordinatorWith(t, { storage, config: { timeout: 30, tolerableFailures: 5 } });
  const completion = coordinator.triggerCheckpoint('checkpoint');
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  await assert.rejects(completion, rejectsWith('CHECKPOINT_ABORTED', /checkpointing\.timeout/));
  release();
  await settle();
  assert.deepEqual(gateway.failures, [], 'the checkpoint was aborted already; its late metadata failure is not the job’s');
});

test('a metadata write of the previous attempt that fails after a restart does not fail the new attempt', async (t) => {
  const { storage, release } = await slowFailingMetadataStorage(t, 'the disk went away');
  const { coordinator, gateway } = await coordinatorWith(t, { storage });
  const completion = coordinator.triggerCheckpoint('checkpoint');
  completion.catch(() => {});
  await acknowledgeAll(coordinator, storage, lastLocation(gateway));
  coordinator.detach('JOB_FAILOVER', new Error('a task failed'));
  const next = new RecordingGateway();
  coordinator.attach(next);
  release();
  await settle();
  assert.deepEqual(next.failures, [], 'checkpoint 1 belonged to the attempt that ended');
});

test('the scheduler turned on while no attempt is attached (an early stop-with-savepoint refused) still triggers once one attaches', async (t) => {
  const { coordinator, gateway } = await coordinatorWith(t, { attach: false, config: { interval: 20 } });
  coordinator.stopCheckpointScheduler();
  coordinator.startCheckpointScheduler(); // what a refused stop-with-savepoint does
  await sleep(60); // its timer fires with nothing attached
  coordinator.attach(gateway);
  coordinator.startCheckpointScheduler(); // what the attempt does once its tasks run
  await until(() => gateway.triggered.length > 0, 'a periodic checkpoint', 5_000);
});

test('the first checkpoint of an attempt comes soon after its tasks run, not a whole interval later (a restart is visible within a second)', async (t) => {
  const { coordinator, gateway } = await coordinatorWith(t, { attach: false, config: { interval: 60_000 } });
  coordinator.attach(gateway);
  coordinator.startCheckpointScheduler();
  await until(() => gateway.triggered.length === 1, 'the first periodic trigger', 2000);
  coordinator.stopCheckpointScheduler();
});
