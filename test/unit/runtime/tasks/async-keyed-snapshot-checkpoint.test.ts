import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CheckpointStatsTracker } from '../../../../src/checkpoint/checkpoint-stats-tracker.ts';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { listState, valueState } from '../../../../src/core/state/state-descriptors.ts';
import { TaskMetrics } from '../../../../src/runtime/metrics/task-metrics.ts';
import { OperatorChain } from '../../../../src/runtime/tasks/operator-chain.ts';
import { SubtaskCheckpointCoordinator } from '../../../../src/runtime/tasks/subtask-checkpoint-coordinator.ts';
import { HeapKeyedStateBackend } from '../../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../../src/state/key-group-range.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { FakeRecordWriter, RecordingMaster, tempStorage } from './task-test-kit.ts';

/**
 * The asynchronous part of a task's checkpoint (issue 34): the barrier goes downstream after only
 * the synchronous part of the keyed snapshot; the keyed state is then written in slices between
 * turns of the event loop, while the task goes on changing it, and the acknowledged file holds the
 * state at the barrier.
 */

const KEYS = 100_000;
const total = valueState<{ n: number }>('total');
const seen = listState<number>('seen');

class PassThrough extends StreamOperator<unknown, unknown> {
  processBatch(batch: unknown[]): unknown[] {
    return batch;
  }
}

function backend(): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'keyed' });
}

test('the barrier goes on before the keyed state is written; records change it between the slices; the acknowledged file holds it as at the barrier', async (t) => {
  const storage = await tempStorage(t);
  const writer = new FakeRecordWriter();
  const master = new RecordingMaster();
  const chain = new OperatorChain([writer.asRecordWriter()], new TaskMetrics());
  const keyed = backend();
  const value = keyed.getState(total);
  const list = keyed.getState(seen);
  for (let i = 0; i < KEYS; i++) {
    keyed.setCurrentKey(i);
    value.update({ n: i });
    list.add(i);
  }
  chain.add({ uid: 'keyed', name: 'keyed', operator: new PassThrough(), keyed, operatorState: new OperatorStateBackend() });
  const coordinator = new SubtaskCheckpointCoordinator({
    chain,
    stateHolders: () => chain.operators,
    listeners: () => [chain],
    storage,
    vertexId: 1,
    subtaskIndex: 0,
    toMaster: master.send,
  });

  const location = storage.checkpointLocation(3);
  await coordinator.checkpointState(location, 0);
  assert.deepEqual(writer.trace, ['barrier 3'], 'the barrier went on after the synchronous part');

  // "Records": each turn of the event loop changes keys in place and through the state objects,
  // as the task's loop would between the snapshot's slices.
  let turns = 0;
  let next = 0;
  while (master.messages.length === 0) {
    turns++;
    for (let r = 0; r < 500; r++) {
      keyed.setCurrentKey(next);
      const current = value.value() as { n: number };
      current.n = -1; // in place
      value.update(current);
      list.add(-1);
      next = (next + 7919) % KEYS;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.ok(turns > 2, `records were processed in ${turns} turns while the snapshot was written`);

  const [ack] = master.of('ack');
  assert.ok(ack !== undefined, `acknowledged: ${JSON.stringify(master.messages)}`);
  const restored = backend();
  restored.restore([await storage.readState(location, ack.operators[0]?.keyed as StateHandle)]);
  const restoredValue = restored.getState(total);
  const restoredList = restored.getState(seen);
  let checked = 0;
  for (let i = 0; i < KEYS; i += 13) {
    restored.setCurrentKey(i);
    assert.deepEqual(restoredValue.value(), { n: i }, `key ${i} as at the barrier`);
    assert.deepEqual(restoredList.get(), [i]);
    checked++;
  }
  assert.ok(checked > 7000);
  // The live state has every change.
  keyed.setCurrentKey(0);
  assert.deepEqual(value.value(), { n: -1 });
  assert.equal(ack.checkpointId, 3);
  assert.ok((ack.syncMs ?? -1) >= 0 && (ack.asyncMs ?? -1) >= 0, `the acknowledgement carries both parts: ${ack.syncMs}, ${ack.asyncMs}`);
});

test('a keyed state that cannot be written declines the checkpoint as an asynchronous failure after the barrier went on, and frees the state', async (t) => {
  const storage = await tempStorage(t);
  const writer = new FakeRecordWriter();
  const master = new RecordingMaster();
  const chain = new OperatorChain([writer.asRecordWriter()], new TaskMetrics());
  const keyed = backend();
  const bad = keyed.getState(valueState<unknown>('bad'));
  keyed.setCurrentKey('a');
  bad.update({ f: () => 1 });
  chain.add({ uid: 'keyed', name: 'keyed', operator: new PassThrough(), keyed, operatorState: new OperatorStateBackend() });
  const coordinator = new SubtaskCheckpointCoordinator({
    chain,
    stateHolders: () => chain.operators,
    listeners: () => [chain],
    storage,
    vertexId: 1,
    subtaskIndex: 0,
    toMaster: master.send,
  });
  await coordinator.checkpointState(storage.checkpointLocation(1), 0);
  assert.deepEqual(writer.trace, ['barrier 1']);
  while (master.messages.length === 0) await new Promise((resolve) => setImmediate(resolve));
  const [decline] = master.of('decline');
  assert.equal(decline?.failure.reason, 'CHECKPOINT_ASYNC_EXCEPTION');
  assert.match(decline?.failure.message ?? '', /bad/);
  // The next checkpoint is not held back by the failed one.
  keyed.setCurrentKey('a');
  bad.update(1);
  await coordinator.checkpointState(storage.checkpointLocation(2), 0);
  while (master.of('ack').length === 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(master.of('ack')[0]?.checkpointId, 2);
});

test('the checkpoint stats keep the longest sync and async durations of the tasks, once a task reports them', () => {
  const tracker = new CheckpointStatsTracker();
  tracker.reportPending(1, 'checkpoint', 1_000);
  tracker.reportAcknowledged(1, 10, 2);
  assert.equal(tracker.history()[0]?.syncMs, undefined, 'not reported: not shown');
  tracker.reportAcknowledged(1, 10, 2, { syncMs: 3, asyncMs: 900 });
  tracker.reportAcknowledged(1, 10, 5, { syncMs: 40, asyncMs: 100 });
  tracker.reportCompleted(1, 2_000);
  const [row] = tracker.history();
  assert.deepEqual([row?.bytes, row?.alignmentMs, row?.syncMs, row?.asyncMs, row?.durationMs], [30, 5, 40, 900, 1_000]);
});
