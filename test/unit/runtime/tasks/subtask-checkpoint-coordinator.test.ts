import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../../../src/checkpoint/storage/checkpoint-storage.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import type { StateKind } from '../../../../src/checkpoint/storage/state-file-name.ts';
import { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { valueState } from '../../../../src/core/state/state-descriptors.ts';
import { TaskMetrics } from '../../../../src/runtime/metrics/task-metrics.ts';
import { type ChainedOperator, OperatorChain } from '../../../../src/runtime/tasks/operator-chain.ts';
import { type CheckpointListener, SubtaskCheckpointCoordinator } from '../../../../src/runtime/tasks/subtask-checkpoint-coordinator.ts';
import { HeapKeyedStateBackend } from '../../../../src/state/heap-keyed-state-backend.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../../src/state/key-group-range-assignment.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { FakeRecordWriter, RecordingMaster, settle, sleep, tempStorage, until } from './task-test-kit.ts';

const count = valueState<number>('count', 0);

/** Writes the checkpoint id into its operator state in snapshotState (as a two-phase-commit sink stores its committable). */
class SnapshottingOperator extends StreamOperator<unknown, unknown> {
  readonly log: string[];
  readonly #state: OperatorStateBackend;
  readonly #fail: Error | undefined;

  constructor(state: OperatorStateBackend, log: string[], fail?: Error) {
    super();
    this.#state = state;
    this.log = log;
    this.#fail = fail;
  }

  processBatch(batch: unknown[]): unknown[] {
    return batch;
  }

  override async snapshotState(checkpointId: number): Promise<void> {
    this.log.push(`snapshotState(${checkpointId})`);
    if (this.#fail !== undefined) throw this.#fail;
    this.#state.getListState<string>('committables').add(`txn of ${checkpointId}`);
  }
}

function keyedBackend(counts: Record<string, number>): HeapKeyedStateBackend {
  const backend = new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 1, 0), operatorName: 'counter' });
  for (const [key, value] of Object.entries(counts)) {
    backend.setCurrentKey(key);
    backend.getState(count).update(value);
  }
  return backend;
}

interface Setup {
  storage: CheckpointStorage | undefined;
  fail?: Error;
  listeners?: CheckpointListener[];
  incremental?: boolean;
}

function coordinatorWith(setup: Setup) {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const master = new RecordingMaster();
  const chain = new OperatorChain([writer.asRecordWriter()], new TaskMetrics());
  const sinkState = new OperatorStateBackend();
  const counter: ChainedOperator = {
    uid: 'counter',
    name: 'counter',
    operator: new SnapshottingOperator(new OperatorStateBackend(), []),
    keyed: keyedBackend({ a: 1, b: 2 }),
    operatorState: new OperatorStateBackend(),
  };
  const sink: ChainedOperator = {
    uid: 'sink',
    name: 'sink',
    operator: new SnapshottingOperator(sinkState, log, setup.fail),
    keyed: undefined,
    operatorState: sinkState,
  };
  chain.add(counter);
  chain.add(sink);
  const coordinator = new SubtaskCheckpointCoordinator({
    chain,
    stateHolders: () => chain.operators,
    listeners: () => setup.listeners ?? [chain],
    storage: setup.storage,
    vertexId: 3,
    subtaskIndex: 1,
    toMaster: master.send,
    incremental: setup.incremental,
  });
  return { coordinator, chain, writer, master, log, counter, sink };
}

/** A file-system storage whose state writes fail. */
class FailingWriteStorage extends FileSystemCheckpointStorage {
  override writeState(_location: CheckpointLocation, _uid: string, _subtask: number, _kind: StateKind, _bytes: Uint8Array): Promise<StateHandle> {
    return Promise.reject(new Error('disk full'));
  }
}

async function failingStorage(t: TestContext): Promise<FailingWriteStorage> {
  const storage = await tempStorage(t);
  return new FailingWriteStorage(storage.root);
}

test('checkpointState runs the snapshot hooks before the backends are snapshotted, broadcasts the barrier, then acknowledges with handles that read back', async (t) => {
  const storage = await tempStorage(t);
  const { coordinator, writer, master, counter, sink } = coordinatorWith({ storage });
  const location = storage.checkpointLocation(4);
  await coordinator.checkpointState(location, 7);
  assert.deepEqual(writer.trace, ['barrier 4']);
  assert.deepEqual(master.messages, [], 'the state files are written after the barrier went out');

  await until(() => master.messages.length > 0, 'the acknowledgement');
  const [ack] = master.of('ack');
  assert.ok(ack !== undefined);
  assert.equal(master.messages.length, 1);
  assert.equal(ack.checkpointId, 4);
  assert.equal(ack.vertexId, 3);
  assert.equal(ack.subtaskIndex, 1);
  assert.equal(ack.alignmentMs, 7);
  assert.deepEqual(
    ack.operators.map((operator) => [operator.uid, operator.keyed !== undefined, operator.operator !== undefined]),
    [
      ['counter', true, false],
      ['sink', false, true],
    ],
    'a holder with empty operator state writes no operator file',
  );

  const keyedHandle = ack.operators[0]?.keyed as StateHandle;
  const operatorHandle = ack.operators[1]?.operator as StateHandle;
  const keyedBytes = await storage.readState(location, keyedHandle);
  const operatorBytes = await storage.readState(location, operatorHandle);
  assert.deepEqual(new Uint8Array(keyedBytes), counter.keyed?.snapshot());
  assert.deepEqual(new Uint8Array(operatorBytes), sink.operatorState.snapshot());
  assert.equal(ack.bytes, keyedBytes.byteLength + operatorBytes.byteLength);
  assert.deepEqual(
    OperatorStateBackend.restoreFor([operatorBytes], 1, 0).getListState('committables').get(),
    ['txn of 4'],
    "the snapshot hook's write is in the checkpoint",
  );
});

test('state changed after the barrier went out is not in the checkpoint', async (t) => {
  const storage = await tempStorage(t);
  const { coordinator, master, counter } = coordinatorWith({ storage });
  const location = storage.checkpointLocation(1);
  await coordinator.checkpointState(location, 0);
  const keyed = counter.keyed as HeapKeyedStateBackend;
  keyed.setCurrentKey('a');
  keyed.getState(count).update(100);
  await until(() => master.messages.length > 0, 'the acknowledgement');
  const handle = master.of('ack')[0]?.operators[0]?.keyed as StateHandle;
  const restored = keyedBackend({});
  restored.restore([await storage.readState(location, handle)]);
  restored.setCurrentKey('a');
  assert.equal(restored.getState(count).value(), 1);
  restored.setCurrentKey('b');
  assert.equal(restored.getState(count).value(), 2);
});

test('a snapshot hook that throws declines with CHECKPOINT_DECLINED and its message, still broadcasts the barrier, and sends no ack', async (t) => {
  const storage = await tempStorage(t);
  const { coordinator, writer, master, log } = coordinatorWith({ storage, fail: new Error('cannot pre-commit') });
  const location = storage.checkpointLocation(2);
  await coordinator.checkpointState(location, 0);
  assert.deepEqual(log, ['snapshotState(2)']);
  assert.deepEqual(writer.trace, ['barrier 2']);
  await sleep(20);
  assert.deepEqual(master.messages, [
    { type: 'decline', checkpointId: 2, vertexId: 3, subtaskIndex: 1, failure: { reason: 'CHECKPOINT_DECLINED', message: 'cannot pre-commit' } },
  ]);
  assert.deepEqual(await storage.listLocations('checkpoint'), [], 'no state file was written');
});

test('a state write that fails declines with CHECKPOINT_ASYNC_EXCEPTION after the barrier went out', async (t) => {
  const storage = await failingStorage(t);
  const { coordinator, writer, master } = coordinatorWith({ storage });
  await coordinator.checkpointState(storage.checkpointLocation(3), 0);
  assert.deepEqual(writer.trace, ['barrier 3']);
  await until(() => master.messages.length > 0, 'the decline');
  await settle();
  assert.deepEqual(master.messages, [
    { type: 'decline', checkpointId: 3, vertexId: 3, subtaskIndex: 1, failure: { reason: 'CHECKPOINT_ASYNC_EXCEPTION', message: 'disk full' } },
  ]);
});

test('a task without checkpoint storage declines with CHECKPOINT_ASYNC_EXCEPTION', async () => {
  const { coordinator, writer, master } = coordinatorWith({ storage: undefined });
  await coordinator.checkpointState({ kind: 'checkpoint', checkpointId: 1, path: '/nonexistent/chk-1' }, 0);
  assert.deepEqual(writer.trace, ['barrier 1']);
  await until(() => master.messages.length > 0, 'the decline');
  const [decline] = master.of('decline');
  assert.equal(decline?.failure.reason, 'CHECKPOINT_ASYNC_EXCEPTION');
  assert.match(decline.failure.message, /no storage/);
});

test('notifyCheckpointComplete calls the listeners in order, then tells the master the task acted on it', async () => {
  const order: string[] = [];
  const master = new RecordingMaster();
  const listener = (name: string, delayMs: number): CheckpointListener => ({
    notifyCheckpointComplete: async (id) => {
      await sleep(delayMs);
      order.push(`${name} complete ${id}`);
    },
    notifyCheckpointAborted: (id) => {
      order.push(`${name} aborted ${id}`);
    },
  });
  const { chain } = coordinatorWith({ storage: undefined });
  const coordinator = new SubtaskCheckpointCoordinator({
    chain,
    stateHolders: () => [],
    listeners: () => [listener('chain', 10), listener('reader', 0)],
    storage: undefined,
    vertexId: 0,
    subtaskIndex: 2,
    toMaster: (message) => {
      order.push(message.type);
      master.send(message);
    },
  });
  await coordinator.notifyCheckpointComplete(5);
  assert.deepEqual(order, ['chain complete 5', 'reader complete 5', 'notified']);
  assert.deepEqual(master.messages, [{ type: 'notified', checkpointId: 5, vertexId: 0, subtaskIndex: 2 }]);

  await coordinator.notifyCheckpointAborted(6);
  assert.deepEqual(order.slice(3), ['chain aborted 6', 'reader aborted 6']);
  assert.equal(master.messages.length, 1, 'an abort is not reported back');
});

test('abortCheckpoint declines with the given failure', () => {
  const { coordinator, master } = coordinatorWith({ storage: undefined });
  coordinator.abortCheckpoint(8, { reason: 'CHECKPOINT_DECLINED_SUBSUMED', message: 'barrier 9 overtook it' });
  assert.deepEqual(master.messages, [
    { type: 'decline', checkpointId: 8, vertexId: 3, subtaskIndex: 1, failure: { reason: 'CHECKPOINT_DECLINED_SUBSUMED', message: 'barrier 9 overtook it' } },
  ]);
});

test('incremental checkpoints: a savepoint completing does not drop the changes the next checkpoint adds to its base (checkpoint 11 aborted, savepoint 12 complete, 13 on 10)', async (t) => {
  const storage = await tempStorage(t);
  const { coordinator: incremental, master, counter } = coordinatorWith({ storage, incremental: true });
  const keyed = counter.keyed as HeapKeyedStateBackend;
  const set = (key: string, value: number) => {
    keyed.setCurrentKey(key);
    keyed.getState(count).update(value);
  };
  const acked = async (id: number) => {
    await until(() => master.of('ack').some((ack) => ack.checkpointId === id), `the acknowledgement of ${id}`);
    return master.of('ack').find((ack) => ack.checkpointId === id)?.operators[0] as { keyed: StateHandle; keyedChanges?: StateHandle[] };
  };

  await incremental.checkpointState(storage.checkpointLocation(10), 0);
  await acked(10);
  await incremental.notifyCheckpointComplete(10);
  set('a', 5); // between checkpoints 10 and 11
  await incremental.checkpointState({ ...storage.checkpointLocation(11), incrementalBase: 10 }, 0);
  await acked(11);
  await incremental.notifyCheckpointAborted(11);
  await incremental.checkpointState(storage.savepointLocation(12), 0);
  await acked(12);
  await incremental.notifyCheckpointComplete(12); // a savepoint: full, no base of any chain
  set('b', 7);
  await incremental.checkpointState({ ...storage.checkpointLocation(13), incrementalBase: 10 }, 0);
  const thirteen = await acked(13);
  assert.equal(thirteen.keyedChanges?.length, 1, 'checkpoint 13 adds to checkpoint 10');

  const read = (handle: StateHandle) => storage.readState(storage.checkpointLocation(handle.checkpoint ?? 13), handle);
  const restored = keyedBackend({});
  restored.restore([await read(thirteen.keyed), ...(await Promise.all((thirteen.keyedChanges ?? []).map(read)))]);
  restored.setCurrentKey('a');
  assert.equal(restored.getState(count).value(), 5, "the change between 10 and the aborted 11 is in 13's chain");
  restored.setCurrentKey('b');
  assert.equal(restored.getState(count).value(), 7);
});
