import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import type { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import type { Source } from '../../../../src/core/connector/source.ts';
import { type OperatorContext, StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import type { ListState } from '../../../../src/core/state/state-types.ts';
import type { JobVertex } from '../../../../src/graph/job-graph.ts';
import { type OperatorNode, type SourceNode, StreamGraph } from '../../../../src/graph/stream-graph.ts';
import type { RestoreInfo } from '../../../../src/runtime/deployment/restore-info.ts';
import type { ChannelMessage } from '../../../../src/runtime/io/channel-message.ts';
import { StreamTask } from '../../../../src/runtime/tasks/stream-task.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { FakeRecordWriter, RecordingMaster, sleep, tempStorage, until } from './task-test-kit.ts';

/** Keeps every record it saw in its operator state, so a snapshot shows which records were processed before it. */
class CollectOperator extends StreamOperator<unknown, unknown> {
  #seen!: ListState<unknown>;

  override open(context: OperatorContext): void {
    this.#seen = context.operatorState.getListState('seen');
  }

  processBatch(batch: unknown[]): unknown[] {
    this.#seen.addAll(batch);
    return batch;
  }
}

interface Harness {
  task: StreamTask;
  writer: FakeRecordWriter;
  master: RecordingMaster;
  credits: number[];
}

/** A task `collect` fed by channels 10 and 11, unaligned checkpoints on (timeout 0). */
async function collectTask(t: TestContext, storage: FileSystemCheckpointStorage, restore?: RestoreInfo): Promise<Harness> {
  const graph = new StreamGraph();
  graph.addNode<SourceNode>({ kind: 'source', uid: 'numbers', name: 'numbers', parallelism: 2, source: {} as unknown as Source<unknown> });
  graph.addNode<OperatorNode>({
    kind: 'operator',
    uid: 'collect',
    name: 'collect',
    parallelism: 1,
    createOperator: () => new CollectOperator(),
    keySelector: undefined,
  });
  graph.addEdge({ source: 0, target: 1, partitioning: 'rebalance' });
  const vertex: JobVertex = { id: 1, nodeIds: [1], name: 'collect', parallelism: 1, isSource: false, isSink: false, keyed: false };
  const writer = new FakeRecordWriter();
  const master = new RecordingMaster();
  const credits: number[] = [];
  const task = new StreamTask({
    jobName: 'test',
    config: parseEnvironmentConfig({
      parallelism: 1,
      workers: 1,
      checkpointing: { interval: 60_000, storage: storage.root, unaligned: true, alignedCheckpointTimeout: 0 },
    }),
    vertex,
    subtaskIndex: 0,
    attemptNumber: restore === undefined ? 0 : 1,
    streamGraph: graph,
    uids: ['numbers', 'collect'],
    restore,
    storage,
    inputChannels: [10, 11],
    recordWriters: [writer.asRecordWriter()],
    returnCredit: (channel) => credits.push(channel),
    toMaster: master.send,
  });
  t.after(() => task.close());
  await task.open();
  return { task, writer, master, credits };
}

const records = (channel: number, ...values: unknown[]): ChannelMessage => ({ kind: 'records', channel, records: values });

async function operatorState(storage: FileSystemCheckpointStorage, handle: StateHandle | undefined): Promise<OperatorStateBackend> {
  assert.ok(handle !== undefined);
  return OperatorStateBackend.restoreFor([await storage.readState(storage.checkpointLocation(1), handle)], 1, 0);
}

test('an unaligned checkpoint snapshots at the first barrier, forwards it ahead of the queued records, and acknowledges them as channel state; a restore replays them once, before new input', async (t) => {
  const storage = await tempStorage(t);
  const location = storage.checkpointLocation(1);
  const options = { triggeredAt: Date.now(), alignedCheckpointTimeout: 0 };
  const first = await collectTask(t, storage);
  // Queued before the loop runs, as under back pressure: the barrier of channel 10 is behind two batches.
  first.task.deliver(records(10, 1, 2));
  first.task.deliver(records(11, 3));
  first.task.deliver({ kind: 'barrier', channel: 10, location, options });
  first.task.deliver(records(10, 'after'));
  first.task.start();
  await until(() => first.writer.records.length === 4, 'the queued records');
  assert.deepEqual(first.writer.trace, ['barrier 1', '[1,2]', '[3]', '["after"]'], 'the barrier overtook the queued records');
  first.task.deliver(records(11, 4));
  await sleep(10);
  assert.equal(first.master.of('ack').length, 0, 'the acknowledgement waits for the barrier of channel 11');
  first.task.deliver({ kind: 'barrier', channel: 11, location, options });
  first.task.deliver(records(11, 'late'));
  await until(() => first.master.of('ack').length === 1, 'the acknowledgement');
  const ack = first.master.of('ack')[0];
  assert.ok(ack !== undefined);
  assert.deepEqual(
    ack.operators.map((operator) => operator.uid),
    ['collect', 'collect#channel-state'],
  );
  assert.deepEqual((await operatorState(storage, ack.operators[0]?.operator)).getListState('seen').get(), [], 'nothing was processed before the snapshot');
  assert.deepEqual(first.credits, [10, 11, 10, 11, 11], 'every record sent returned its credit');

  const restore: RestoreInfo = {
    checkpointId: 1,
    kind: 'checkpoint',
    folder: location.path,
    maxParallelism: 128,
    transactionsCommitted: false,
    operators: ack.operators.map((operator) => ({
      uid: operator.uid,
      parallelism: 1,
      subtasks: [{ subtaskIndex: 0, operator: operator.operator as StateHandle }],
    })),
  };
  const second = await collectTask(t, storage, restore);
  second.task.deliver(records(10, 'new'));
  second.task.start();
  await until(() => second.writer.records.length === 5, 'the replayed and the new records');
  assert.deepEqual(second.writer.records, [1, 2, 3, 4, 'new'], 'the channel state, in order, then new input');
  assert.deepEqual(second.credits, [10], 'replayed records return no credit: their sender did not send them in this attempt');
});

test('a restore refuses channel state of another input layout, naming the fix', async (t) => {
  const storage = await tempStorage(t);
  const location = storage.checkpointLocation(1);
  const first = await collectTask(t, storage);
  first.task.deliver(records(11, 'x'));
  first.task.deliver({ kind: 'barrier', channel: 10, location, options: { triggeredAt: Date.now(), alignedCheckpointTimeout: 0 } });
  first.task.start();
  first.task.deliver({ kind: 'barrier', channel: 11, location, options: { triggeredAt: Date.now(), alignedCheckpointTimeout: 0 } });
  await until(() => first.master.of('ack').length === 1, 'the acknowledgement');
  const handle = first.master.of('ack')[0]?.operators.find((operator) => operator.uid === 'collect#channel-state')?.operator;
  assert.ok(handle !== undefined);
  const restore: RestoreInfo = {
    checkpointId: 1,
    kind: 'checkpoint',
    folder: location.path,
    maxParallelism: 128,
    transactionsCommitted: false,
    operators: [{ uid: 'collect#channel-state', parallelism: 1, subtasks: [{ subtaskIndex: 0, operator: handle }] }],
  };
  const graph = new StreamGraph();
  graph.addNode<OperatorNode>({
    kind: 'operator',
    uid: 'collect',
    name: 'collect',
    parallelism: 1,
    createOperator: () => new CollectOperator(),
    keySelector: undefined,
  });
  const task = new StreamTask({
    jobName: 'test',
    config: parseEnvironmentConfig({ parallelism: 1, workers: 1, checkpointing: { interval: 60_000, storage: storage.root, unaligned: true } }),
    vertex: { id: 0, nodeIds: [0], name: 'collect', parallelism: 1, isSource: false, isSink: false, keyed: false },
    subtaskIndex: 0,
    attemptNumber: 1,
    streamGraph: graph,
    uids: ['collect'],
    restore,
    storage,
    inputChannels: [10, 11, 12],
    recordWriters: [],
    returnCredit: () => {},
    toMaster: () => {},
  });
  t.after(() => task.close());
  await assert.rejects(task.open(), (error: Error & { hint?: string }) => {
    assert.match(error.message, /channel state .* is of 2 input channels, and the task now has 3/);
    assert.match(error.hint ?? '', /take a savepoint/);
    return true;
  });
});
