import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { StateHandle } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import type { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import type { Source, SourceReader } from '../../../../src/core/connector/source.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { type OperatorContext, StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import type { ListState } from '../../../../src/core/state/state-types.ts';
import type { JobVertex } from '../../../../src/graph/job-graph.ts';
import { type OperatorNode, type SourceNode, StreamGraph } from '../../../../src/graph/stream-graph.ts';
import type { ChannelMessage } from '../../../../src/runtime/io/channel-message.ts';
import { StreamTask } from '../../../../src/runtime/tasks/stream-task.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { FakeRecordWriter, RecordingMaster, sleep, tempStorage, until } from './task-test-kit.ts';

interface Split {
  id: string;
  records: number[];
  position: number;
}

/** Reads its splits in order; with a budget it pauses (returns no records) once the budget is spent. */
class ArrayReader implements SourceReader<number, Split> {
  splits: Split[] = [];
  allSplits: Split[] = [];
  readonly completed: number[] = [];
  budget = Number.POSITIVE_INFINITY;
  closed = false;

  open(splits: Split[], allSplits: Split[]): void {
    this.splits = splits.map((split) => ({ ...split }));
    this.allSplits = allSplits;
  }

  pollNext(max: number): number[] | null {
    const split = this.splits.find((candidate) => candidate.position < candidate.records.length);
    if (split === undefined) return null;
    if (this.budget <= 0) return [];
    const take = Math.min(max, this.budget, split.records.length - split.position);
    const records = split.records.slice(split.position, split.position + take);
    split.position += take;
    this.budget -= take;
    return records;
  }

  snapshotState(): Split[] {
    return this.splits.map((split) => ({ ...split }));
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.completed.push(checkpointId);
  }

  close(): void {
    this.closed = true;
  }
}

class ArraySource implements Source<number, Split> {
  readonly name = 'numbers';
  readonly bounded = true;
  readonly readers: ArrayReader[] = [];
  readonly #splits: number[][];

  constructor(splits: number[][]) {
    this.#splits = splits;
  }

  createInitialSplits(): Split[] {
    return this.#splits.map((records, index) => ({ id: `split-${index}`, records, position: 0 }));
  }

  createReader(): ArrayReader {
    const reader = new ArrayReader();
    this.readers.push(reader);
    return reader;
  }

  get reader(): ArrayReader {
    const reader = this.readers[0];
    assert.ok(reader !== undefined, 'the task created a reader');
    return reader;
  }
}

class DoubleOperator extends StreamOperator<number, number> {
  processBatch(batch: number[]): number[] {
    return batch.map((value) => value * 2);
  }
}

/** Keeps every record it saw in its operator state (so a checkpoint shows which records were in before its barrier). */
class CollectOperator extends StreamOperator<unknown, unknown> {
  #seen!: ListState<unknown>;

  override open(context: OperatorContext): void {
    this.#seen = context.operatorState.getListState('seen');
  }

  processBatch(batch: unknown[]): unknown[] {
    if (batch.includes('boom')) throw new Error('cannot handle boom');
    if (batch.includes('weir-boom')) throw new WeirError('INVALID_KEY', 'a record the operator refuses');
    this.#seen.addAll(batch);
    return batch;
  }
}

interface Harness {
  task: StreamTask;
  writer: FakeRecordWriter;
  master: RecordingMaster;
  storage: FileSystemCheckpointStorage;
  credits: number[];
}

async function harness(
  t: TestContext,
  options: { vertex: JobVertex; graph: StreamGraph; uids: string[]; mode?: 'exactly-once' | 'at-least-once'; inputChannels?: number[] },
): Promise<Harness> {
  const storage = await tempStorage(t);
  const writer = new FakeRecordWriter();
  const master = new RecordingMaster();
  const credits: number[] = [];
  const task = new StreamTask({
    jobName: 'test',
    config: parseEnvironmentConfig({
      parallelism: 1,
      workers: 1,
      batchSize: 2,
      checkpointing: { interval: 60_000, mode: options.mode ?? 'exactly-once', storage: storage.root },
    }),
    vertex: options.vertex,
    subtaskIndex: 0,
    attemptNumber: 0,
    streamGraph: options.graph,
    uids: options.uids,
    restore: undefined,
    storage,
    inputChannels: options.inputChannels ?? [],
    recordWriters: [writer.asRecordWriter()],
    returnCredit: (channel) => credits.push(channel),
    toMaster: master.send,
  });
  t.after(() => task.close());
  await task.open();
  return { task, writer, master, storage, credits };
}

/** A source task `numbers -> double` over the splits [1, 2, 3] and [4, 5], batches of 2. */
async function sourceTask(t: TestContext): Promise<Harness & { source: ArraySource }> {
  const source = new ArraySource([
    [1, 2, 3],
    [4, 5],
  ]);
  const graph = new StreamGraph();
  graph.addNode<SourceNode>({ kind: 'source', uid: 'numbers', name: 'numbers', parallelism: 1, source: source as unknown as Source<unknown> });
  graph.addNode<OperatorNode>({
    kind: 'operator',
    uid: 'double',
    name: 'double',
    parallelism: 1,
    createOperator: () => new DoubleOperator(),
    keySelector: undefined,
  });
  graph.addEdge({ source: 0, target: 1, partitioning: 'forward' });
  const vertex: JobVertex = { id: 0, nodeIds: [0, 1], name: 'numbers -> double', parallelism: 1, isSource: true, isSink: false, keyed: false };
  return { ...(await harness(t, { vertex, graph, uids: ['numbers', 'double'] })), source };
}

/** A task `collect` (vertex 1) fed by channels 10 and 11. */
async function channelTask(t: TestContext, mode: 'exactly-once' | 'at-least-once' = 'exactly-once'): Promise<Harness> {
  const graph = new StreamGraph();
  graph.addNode<SourceNode>({ kind: 'source', uid: 'numbers', name: 'numbers', parallelism: 2, source: new ArraySource([]) as unknown as Source<unknown> });
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
  return harness(t, { vertex, graph, uids: ['numbers', 'collect'], mode, inputChannels: [10, 11] });
}

const records = (channel: number, ...values: unknown[]): ChannelMessage => ({ kind: 'records', channel, records: values });

/** What the acknowledged operator state file of `uid` holds, restored as a single subtask. */
async function acknowledgedOperatorState(h: Harness, uid: string, checkpointId = 1): Promise<OperatorStateBackend> {
  const ack = h.master.of('ack').find((message) => message.checkpointId === checkpointId);
  assert.ok(ack !== undefined, `checkpoint ${checkpointId} was acknowledged`);
  const handle = ack.operators.find((operator) => operator.uid === uid)?.operator;
  assert.ok(handle !== undefined, `the ack holds operator state of ${uid}`);
  const bytes = await h.storage.readState(h.storage.checkpointLocation(checkpointId), handle as StateHandle);
  return OperatorStateBackend.restoreFor([bytes], 1, 0);
}

test('a source task reads its splits to the end, emits the records through its chain, then end of data, and reports endOfData once', async (t) => {
  const h = await sourceTask(t);
  h.task.start();
  await until(() => h.master.of('endOfData').length > 0, 'the end of data');
  await sleep(10);
  assert.deepEqual(h.writer.trace, ['[2,4]', '[6]', '[8,10]', 'watermark Infinity', 'end']);
  assert.deepEqual(h.master.messages, [{ type: 'endOfData', vertexId: 0, subtaskIndex: 0 }]);
  assert.equal(h.task.metrics.recordsIn, 5);
  assert.equal(h.task.metrics.recordsOut, 5);
  assert.equal(h.task.name, 'numbers -> double (1/1)');
  await h.task.close();
  assert.equal(h.source.reader.closed, true);
});

test('a finished source task still takes part in the final checkpoint: its barrier follows the end of data', async (t) => {
  const h = await sourceTask(t);
  h.task.start();
  await until(() => h.master.of('endOfData').length > 0, 'the end of data');
  h.task.triggerCheckpoint(h.storage.checkpointLocation(1));
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  assert.deepEqual(h.writer.trace.slice(-2), ['end', 'barrier 1']);
  const splits = (await acknowledgedOperatorState(h, 'numbers')).getListState<Split>('source-splits').get();
  assert.deepEqual(
    splits.map((split) => [split.id, split.position]),
    [
      ['split-0', 3],
      ['split-1', 2],
    ],
  );
});

test("a triggered source task snapshots the reader's positions into its split state, and hears of the completion", async (t) => {
  const h = await sourceTask(t);
  h.source.reader.budget = 3;
  h.task.start();
  await until(() => h.writer.records.length === 3, 'the first three records');
  assert.equal(h.source.reader.allSplits.length, 2, 'a fresh start gives the reader every initial split');
  h.task.triggerCheckpoint(h.storage.checkpointLocation(1));
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  assert.deepEqual(h.writer.trace, ['[2,4]', '[6]', 'barrier 1']);

  const [ack] = h.master.of('ack');
  assert.equal(ack?.vertexId, 0);
  assert.deepEqual(
    ack.operators.map((operator) => [operator.uid, operator.keyed !== undefined, operator.operator !== undefined]),
    [
      ['numbers', false, true],
      ['double', false, false],
    ],
  );
  const state = await acknowledgedOperatorState(h, 'numbers');
  assert.deepEqual(state.getListState<Split>('source-splits').get(), [
    { id: 'split-0', records: [1, 2, 3], position: 3 },
    { id: 'split-1', records: [4, 5], position: 0 },
  ]);
  assert.equal(state.getUnionListState<Split>('source-all-splits').get().length, 2);

  h.task.notifyCheckpointComplete(1);
  await until(() => h.master.of('notified').length > 0, 'the notification');
  assert.deepEqual(h.source.reader.completed, [1]);
  assert.deepEqual(h.master.of('notified'), [{ type: 'notified', checkpointId: 1, vertexId: 0, subtaskIndex: 0 }]);

  h.source.reader.budget = Number.POSITIVE_INFINITY;
  await until(() => h.master.of('endOfData').length > 0, 'the end of data');
  assert.deepEqual(h.writer.trace, ['[2,4]', '[6]', 'barrier 1', '[8,10]', 'watermark Infinity', 'end']);
});

test('a stop-with-savepoint (suspend) stops the reading after its barrier; when that savepoint is aborted the source reads on', async (t) => {
  const h = await sourceTask(t);
  h.source.reader.budget = 3;
  h.task.start();
  await until(() => h.writer.records.length === 3, 'the first three records');
  const savepoint = h.storage.savepointLocation(1);
  h.task.triggerCheckpoint(savepoint, 'suspend');
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  h.source.reader.budget = Number.POSITIVE_INFINITY;
  await sleep(20);
  assert.deepEqual(h.writer.trace, ['[2,4]', '[6]', 'barrier 1']);
  h.task.notifyCheckpointAborted(1);
  await until(() => h.master.of('endOfData').length > 0, 'the end of data');
  assert.deepEqual(h.writer.trace, ['[2,4]', '[6]', 'barrier 1', '[8,10]', 'watermark Infinity', 'end']);
});

test('a stop-with-savepoint with drain sends the end of event time before its barrier; its abort fails the task with STOP_FAILED', async (t) => {
  const h = await sourceTask(t);
  h.source.reader.budget = 1;
  h.task.start();
  await until(() => h.writer.records.length === 1, 'the first record');
  h.task.triggerCheckpoint(h.storage.savepointLocation(1), 'drain');
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  assert.deepEqual(h.writer.trace, ['[2]', 'watermark Infinity', 'barrier 1']);
  h.task.notifyCheckpointAborted(1);
  await until(() => h.master.of('failed').length > 0, 'the failure');
  assert.equal(h.master.of('failed')[0]?.error.code, 'STOP_FAILED');
});

test('exactly-once: records of the channel that delivered the barrier first are held until the other channel delivers its barrier', async (t) => {
  const h = await channelTask(t);
  h.task.start();
  h.task.deliver(records(10, 1));
  h.task.deliver({ kind: 'barrier', channel: 10, location: h.storage.checkpointLocation(1) });
  h.task.deliver(records(10, 2));
  h.task.deliver(records(11, 3));
  h.task.deliver({ kind: 'barrier', channel: 11, location: h.storage.checkpointLocation(1) });
  await until(() => h.master.of('ack').length > 0 && h.writer.records.length === 3, 'the acknowledgement and every record');
  await sleep(10);
  assert.deepEqual(h.writer.trace, ['[1]', '[3]', 'barrier 1', '[2]']);
  assert.equal(h.master.of('ack').length, 1);
  assert.deepEqual((await acknowledgedOperatorState(h, 'collect')).getListState('seen').get(), [1, 3], 'record 2 came after the barrier of its channel');
  assert.deepEqual(h.credits, [10, 11, 10]);
  assert.equal(h.task.metrics.recordsIn, 3);
});

test('at-least-once: nothing is held back, so the checkpoint may hold records that came after a barrier', async (t) => {
  const h = await channelTask(t, 'at-least-once');
  h.task.start();
  h.task.deliver(records(10, 1));
  h.task.deliver({ kind: 'barrier', channel: 10, location: h.storage.checkpointLocation(1) });
  h.task.deliver(records(10, 2));
  h.task.deliver(records(11, 3));
  h.task.deliver({ kind: 'barrier', channel: 11, location: h.storage.checkpointLocation(1) });
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  await sleep(10);
  assert.deepEqual(h.writer.trace, ['[1]', '[2]', '[3]', 'barrier 1']);
  assert.equal(h.master.of('ack').length, 1);
  assert.deepEqual((await acknowledgedOperatorState(h, 'collect')).getListState('seen').get(), [1, 2, 3]);
});

test('a task whose channels have all ended reports endOfData once, and still aligns the final checkpoint', async (t) => {
  const h = await channelTask(t);
  h.task.start();
  h.task.deliver(records(10, 'a'));
  h.task.deliver({ kind: 'end-of-data', channel: 10 });
  h.task.deliver({ kind: 'end-of-data', channel: 11 });
  await until(() => h.master.of('endOfData').length > 0, 'the end of data');
  h.task.deliver({ kind: 'barrier', channel: 11, location: h.storage.checkpointLocation(1) });
  h.task.deliver({ kind: 'barrier', channel: 10, location: h.storage.checkpointLocation(1) });
  await until(() => h.master.of('ack').length > 0, 'the acknowledgement');
  assert.deepEqual(h.writer.trace, ['["a"]', 'watermark Infinity', 'end', 'barrier 1']);
  assert.equal(h.master.of('endOfData').length, 1);
});

test('a task whose operator throws reports failed once, with a TASK_FAILED error naming the task', async (t) => {
  const h = await channelTask(t);
  h.task.start();
  h.task.deliver(records(10, 'ok'));
  h.task.deliver(records(11, 'boom'));
  h.task.deliver(records(10, 'never'));
  await until(() => h.master.of('failed').length > 0, 'the failure');
  h.task.deliver(records(10, 'boom'));
  h.task.notifyCheckpointComplete(1);
  await sleep(20);
  const failed = h.master.of('failed');
  assert.equal(failed.length, 1);
  assert.equal(failed[0]?.vertexName, 'collect');
  assert.equal(failed[0]?.subtaskIndex, 0);
  const error = WeirError.fromSerialized(failed[0].error);
  assert.equal(error.code, 'TASK_FAILED');
  assert.equal(error.fault, 'user');
  assert.match(
    error.message,
    /^collect \(1\/1\) failed: cannot handle boom\n {4}at .*stream-task.test.ts:\d+:\d+/,
    'the message names where the user code threw',
  );
  assert.match(error.stack ?? '', /processBatch/, "the stack is the operator's");
  assert.deepEqual(h.writer.trace, ['["ok"]']);
  assert.equal(h.master.messages.length, 1, 'nothing runs after the failure');
});

test('a WeirError thrown by an operator reaches the master as it is', async (t) => {
  const h = await channelTask(t);
  h.task.start();
  h.task.deliver(records(10, 'weir-boom'));
  await until(() => h.master.of('failed').length > 0, 'the failure');
  const [failed] = h.master.of('failed');
  assert.equal(failed?.error.code, 'INVALID_KEY');
  assert.equal(failed.vertexName, 'collect');
});
