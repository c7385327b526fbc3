import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { type TestContext, test } from 'node:test';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { valueState } from '../../../../src/core/state/state-descriptors.ts';
import { TaskMetrics } from '../../../../src/runtime/metrics/task-metrics.ts';
import { OperatorChain } from '../../../../src/runtime/tasks/operator-chain.ts';
import { SubtaskCheckpointCoordinator } from '../../../../src/runtime/tasks/subtask-checkpoint-coordinator.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../../src/state/key-group-range-assignment.ts';
import { restoreKeyedStateBackend } from '../../../../src/state/keyed-state-backend-restore.ts';
import { LmdbKeyedStateBackend } from '../../../../src/state/lmdb-keyed-state-backend.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { scratchBackends } from '../../state/scratch-backends.ts';
import { FakeRecordWriter, RecordingMaster, tempStorage, until } from './task-test-kit.ts';

/**
 * A task's checkpoints with the disk backend's base written beside the chain (issue 34), through
 * the SubtaskCheckpointCoordinator: past `incrementalMaxChanges` a checkpoint still acknowledges
 * its changes and a base is written into its folder meanwhile (counted in the operator's metrics);
 * the next checkpoint's chain starts on that base, and restores the state.
 */

const count = valueState<number>('count', 0);
const { folder, keep } = scratchBackends('materialization-beside');

class PassThrough extends StreamOperator<unknown, unknown> {
  processBatch(batch: unknown[]): unknown[] {
    return batch;
  }
}

/** A task of one keyed operator on the disk backend, checkpointing incrementally with a base beside the chain after every change. */
async function diskTask(t: TestContext) {
  const storage = await tempStorage(t);
  const range = computeKeyGroupRangeForOperatorIndex(128, 1, 0);
  const keyed = new LmdbKeyedStateBackend({ maxParallelism: 128, keyGroupRange: range, operatorName: 'counter', dir: folder('task') });
  keep(() => keyed.dispose());
  const metrics = new TaskMetrics();
  const master = new RecordingMaster();
  const chain = new OperatorChain([new FakeRecordWriter().asRecordWriter()], metrics);
  chain.add({ uid: 'counter', name: 'counter', operator: new PassThrough(), keyed, operatorState: new OperatorStateBackend() });
  const coordinator = new SubtaskCheckpointCoordinator({
    chain,
    stateHolders: () => chain.operators,
    listeners: () => [chain],
    storage,
    vertexId: 1,
    subtaskIndex: 0,
    toMaster: master.send,
    incremental: true,
    incrementalMaxChanges: 1,
    metrics: (uid) => metrics.group(uid),
  });
  const set = (key: string, value: number) => {
    keyed.setCurrentKey(key);
    keyed.getState(count).update(value);
  };
  const checkpoint = async (id: number, base: number | undefined) => {
    await coordinator.checkpointState({ ...storage.checkpointLocation(id), ...(base === undefined ? {} : { incrementalBase: base }) }, 0);
    await until(() => master.of('ack').some((ack) => ack.checkpointId === id), `the acknowledgement of ${id}`);
    await coordinator.notifyCheckpointComplete(id);
    return master.of('ack').find((ack) => ack.checkpointId === id)?.operators[0] as { keyed: StateHandle; keyedChanges?: StateHandle[] };
  };
  const operatorMetric = (name: string) => metrics.snapshot(1, 0, 0).operators[`counter.${name}`] ?? 0;

  return { storage, range, keyed, coordinator, master, set, checkpoint, operatorMetric };
}

test('past incrementalMaxChanges a base is written beside the chain while the checkpoint acknowledges its changes; the next chain starts on it', async (t) => {
  const { storage, range, set, checkpoint, operatorMetric } = await diskTask(t);
  for (let i = 0; i < 100; i++) set(`k${i}`, i);
  await checkpoint(10, undefined);
  set('k1', 100);
  assert.equal((await checkpoint(11, 10)).keyedChanges?.length, 1);
  set('k2', 200);
  const twelve = await checkpoint(12, 11);
  assert.deepEqual(
    twelve.keyedChanges?.map((handle) => handle.checkpoint),
    [11, undefined],
    'checkpoint 12 still adds its change to the chain',
  );
  await until(() => operatorMetric('materializationsCompleted') === 1, 'the base beside the chain written');
  assert.ok(operatorMetric('materializedBytes') > 0);
  assert.equal(operatorMetric('materializationsFailed'), 0);
  set('k3', 300);
  const thirteen = await checkpoint(13, 12);
  assert.match(thirteen.keyed.path, /\.keyed-base$/);
  assert.equal(thirteen.keyed.checkpoint, 12, "the base is in checkpoint 12's folder");
  assert.equal(thirteen.keyedChanges?.length, 1, 'then the change of checkpoint 13 alone');

  const read = (handle: StateHandle) => storage.readState(storage.checkpointLocation(handle.checkpoint ?? 13), handle);
  const restored = await restoreKeyedStateBackend(
    { stateBackend: 'heap', maxParallelism: 128, keyGroupRange: range, operatorName: 'r', reinterpreted: false, dir: folder('r') },
    [[await read(thirteen.keyed), ...(await Promise.all((thirteen.keyedChanges ?? []).map(read)))]],
  );
  for (const [key, value] of [
    ['k0', 0],
    ['k1', 100],
    ['k2', 200],
    ['k3', 300],
    ['k99', 99],
  ] as const) {
    restored.setCurrentKey(key);
    assert.equal(restored.getState(count).value(), value, key);
  }
});

test('a checkpoint aborted before its barrier reached the task takes no base beside the chain at that barrier (it could never be used); the next one does', async (t) => {
  const { storage, coordinator, set, checkpoint, operatorMetric } = await diskTask(t);
  for (let i = 0; i < 100; i++) set(`k${i}`, i);
  await checkpoint(10, undefined);
  set('k1', 100);
  await checkpoint(11, 10);
  // Checkpoint 12 expired while its barrier was held up behind back pressure: the abort comes first.
  await coordinator.notifyCheckpointAborted(12);
  set('k2', 200);
  await coordinator.checkpointState({ ...storage.checkpointLocation(12), incrementalBase: 11 }, 0);
  set('k3', 300);
  await checkpoint(13, 11);
  await until(() => operatorMetric('materializationsCompleted') === 1, 'the base beside the chain written');
  const files = async (id: number) => readdir(storage.checkpointLocation(id).path).catch(() => [] as string[]);
  assert.deepEqual(
    (await files(12)).filter((name) => name.endsWith('.keyed-base')),
    [],
    'no base in the aborted checkpoint 12',
  );
  assert.deepEqual(
    (await files(13)).filter((name) => name.endsWith('.keyed-base')),
    ['counter-0.keyed-base'],
    'the base taken at 13',
  );
});
