import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { TaskMetrics } from '../../../../src/runtime/metrics/task-metrics.ts';
import { OperatorChain } from '../../../../src/runtime/tasks/operator-chain.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { describe, FakeRecordWriter, locationOf, type WriterEvent } from './task-test-kit.ts';

interface Hooks {
  batch?: (batch: unknown[], timestamps: readonly number[] | undefined) => unknown[];
  /** The output timestamps of a batch call; undefined leaves outputTimestamps unset. */
  stamps?: (out: unknown[], timestamps: readonly number[] | undefined) => number[] | undefined;
  watermark?: (watermark: number) => unknown[];
  endInput?: () => unknown[];
  processingTime?: (now: number) => unknown[];
}

/** An operator that logs every call as `<name>.<hook>(<argument>)` and does what its hooks say (by default: passes records and timestamps on). */
class LoggingOperator extends StreamOperator<unknown, unknown> {
  readonly name: string;
  readonly #log: string[];
  readonly #hooks: Hooks;

  constructor(name: string, log: string[], hooks: Hooks = {}) {
    super();
    this.name = name;
    this.#log = log;
    this.#hooks = hooks;
  }

  processBatch(batch: unknown[], timestamps?: readonly number[]): unknown[] {
    this.#log.push(`${this.name}.batch(${JSON.stringify(batch)})`);
    const out = this.#hooks.batch?.(batch, timestamps) ?? batch;
    this.outputTimestamps = this.#hooks.stamps === undefined ? (timestamps === undefined ? undefined : [...timestamps]) : this.#hooks.stamps(out, timestamps);
    return out;
  }

  override processWatermark(watermark: number): unknown[] {
    this.#log.push(`${this.name}.watermark(${watermark})`);
    return this.#hooks.watermark?.(watermark) ?? [];
  }

  override onProcessingTime(now: number): unknown[] {
    this.#log.push(`${this.name}.processingTime(${now})`);
    return this.#hooks.processingTime?.(now) ?? [];
  }

  override endInput(): unknown[] {
    this.#log.push(`${this.name}.endInput()`);
    return this.#hooks.endInput?.() ?? [];
  }

  override snapshotState(checkpointId: number): void {
    this.#log.push(`${this.name}.snapshotState(${checkpointId})`);
  }

  override async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await Promise.resolve();
    this.#log.push(`${this.name}.notifyCheckpointComplete(${checkpointId})`);
  }

  override notifyCheckpointAborted(checkpointId: number): void {
    this.#log.push(`${this.name}.notifyCheckpointAborted(${checkpointId})`);
  }

  override close(): void {
    this.#log.push(`${this.name}.close()`);
  }
}

function chainOf(operators: LoggingOperator[], writers: FakeRecordWriter[] = [new FakeRecordWriter()]) {
  const metrics = new TaskMetrics();
  const chain = new OperatorChain(
    writers.map((writer) => writer.asRecordWriter()),
    metrics,
  );
  for (const operator of operators) {
    chain.add({ uid: operator.name, name: operator.name, operator, keyed: undefined, operatorState: new OperatorStateBackend() });
  }
  return { chain, metrics };
}

const double = (batch: unknown[]) => batch.map((value) => (value as number) * 2);

test('a batch goes through the chained operators and what comes out of the end goes to every main writer, counted as records out', async () => {
  const log: string[] = [];
  const first = new FakeRecordWriter();
  const second = new FakeRecordWriter();
  const side = new FakeRecordWriter({ outputTag: 'late' });
  const { chain, metrics } = chainOf(
    [new LoggingOperator('double', log, { batch: double }), new LoggingOperator('inc', log, { batch: (batch) => batch.map((value) => (value as number) + 1) })],
    [first, second, side],
  );
  await chain.processBatch([1, 2, 3], undefined);
  assert.deepEqual(log, ['double.batch([1,2,3])', 'inc.batch([2,4,6])']);
  assert.deepEqual(first.trace, ['[3,5,7]']);
  assert.deepEqual(second.trace, ['[3,5,7]']);
  assert.deepEqual(side.events, [], 'a side-output writer gets no main output');
  assert.equal(metrics.recordsOut, 3);
  await chain.processBatch([10], undefined);
  assert.equal(metrics.recordsOut, 4);
});

test('an operator that returns nothing ends the batch: the operators after it are not called and nothing is emitted', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain, metrics } = chainOf([new LoggingOperator('drop', log, { batch: () => [] }), new LoggingOperator('after', log)], [writer]);
  await chain.processBatch([1, 2], undefined);
  assert.deepEqual(log, ['drop.batch([1,2])']);
  assert.deepEqual(writer.events, []);
  assert.equal(metrics.recordsOut, 0);
});

test('processBatch from a later operator skips the ones before it', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf([new LoggingOperator('a', log), new LoggingOperator('b', log)], [writer]);
  await chain.processBatch([1], undefined, 1);
  assert.deepEqual(log, ['b.batch([1])']);
  assert.deepEqual(writer.trace, ['[1]']);
});

test('timestamps flow: each operator gets the timestamps the one before set, and the writers get the last ones', async () => {
  const seen: (readonly number[] | undefined)[] = [];
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf(
    [
      new LoggingOperator('shift', log, { stamps: (_out, timestamps) => timestamps?.map((ts) => ts + 100) }),
      new LoggingOperator('record', log, {
        batch: (batch, timestamps) => {
          seen.push(timestamps);
          return batch;
        },
      }),
    ],
    [writer],
  );
  await chain.processBatch(['a', 'b'], [1, 2]);
  assert.deepEqual(seen, [[101, 102]]);
  assert.deepEqual(writer.events, [{ kind: 'records', records: ['a', 'b'], timestamps: [101, 102] }]);
});

test('an operator that sets no output timestamps sends its records on without timestamps', async () => {
  const seen: (readonly number[] | undefined)[] = [];
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf(
    [
      new LoggingOperator('forget', log, { stamps: () => undefined }),
      new LoggingOperator('record', log, {
        batch: (batch, timestamps) => {
          seen.push(timestamps);
          return batch;
        },
      }),
    ],
    [writer],
  );
  await chain.processBatch(['a'], [5]);
  assert.deepEqual(seen, [undefined]);
  assert.deepEqual(writer.events, [{ kind: 'records', records: ['a'], timestamps: undefined }]);
});

test('an operator that returns another number of timestamps than records fails the batch with TIMESTAMP_MISMATCH naming it', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf([new LoggingOperator('bad stamps', log, { stamps: () => [1] }), new LoggingOperator('after', log)], [writer]);
  await assert.rejects(chain.processBatch([1, 2], [1, 2]), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'TIMESTAMP_MISMATCH');
    assert.match(error.message, /"bad stamps" returned 2 records with 1 timestamps/);
    return true;
  });
  assert.deepEqual(log, ['bad stamps.batch([1,2])']);
  assert.deepEqual(writer.events, []);
});

test('a timestamp mismatch in what a watermark fired is a TIMESTAMP_MISMATCH too', async () => {
  const log: string[] = [];
  const operator = new LoggingOperator('window', log, {
    watermark: () => {
      operator.outputTimestamps = [1, 2, 3];
      return ['fired'];
    },
  });
  const { chain } = chainOf([operator]);
  await assert.rejects(chain.advanceWatermark(10), (error: unknown) => error instanceof WeirError && error.code === 'TIMESTAMP_MISMATCH');
});

test('side outputs of the last operator go to the writers of their tag after its call, before the main output', async () => {
  const shared: WriterEvent[] = [];
  const log: string[] = [];
  const main = new FakeRecordWriter({ log: shared });
  const late = new FakeRecordWriter({ outputTag: 'late', log: shared });
  const lateToo = new FakeRecordWriter({ outputTag: 'late', log: shared });
  const other = new FakeRecordWriter({ outputTag: 'other', log: shared });
  const box: { chain?: OperatorChain } = {};
  const splitter = new LoggingOperator('split', log, {
    batch: (batch, timestamps) => {
      const kept: unknown[] = [];
      batch.forEach((value, i) => {
        if ((value as number) < 0) assert.equal(box.chain?.sideOutput(1, 'late', value, timestamps?.[i] ?? Number.NaN), true);
        else kept.push(value);
      });
      assert.deepEqual(late.events, [], 'nothing goes out during the call');
      return kept;
    },
    stamps: (out) => out.map(() => 7),
  });
  const { chain } = chainOf([new LoggingOperator('head', log), splitter], [main, late, lateToo, other]);
  box.chain = chain;
  await chain.processBatch([1, -2, 3, -4], [10, 20, 30, 40]);
  assert.deepEqual(shared.map(describe), ['[-2,-4]', '[-2,-4]', '[1,3]']);
  assert.deepEqual(late.events, [{ kind: 'records', records: [-2, -4], timestamps: [20, 40] }]);
  assert.deepEqual(lateToo.events, late.events);
  assert.deepEqual(main.events, [{ kind: 'records', records: [1, 3], timestamps: [7, 7] }]);
  assert.deepEqual(other.events, []);
});

test('side outputs without timestamps (all NaN) go out without timestamps', async () => {
  const late = new FakeRecordWriter({ outputTag: 'late' });
  const box: { chain?: OperatorChain } = {};
  const operator = new LoggingOperator('split', [], {
    batch: (batch) => {
      for (const value of batch) box.chain?.sideOutput(0, 'late', value, Number.NaN);
      return [];
    },
  });
  const { chain } = chainOf([operator], [new FakeRecordWriter(), late]);
  box.chain = chain;
  await chain.processBatch(['x', 'y'], undefined);
  assert.deepEqual(late.events, [{ kind: 'records', records: ['x', 'y'], timestamps: undefined }]);
});

test('a side output of an operator that is not the last, or of a tag no stream reads, returns false and goes nowhere', async () => {
  const late = new FakeRecordWriter({ outputTag: 'late' });
  const { chain } = chainOf([new LoggingOperator('a', []), new LoggingOperator('b', [])], [new FakeRecordWriter(), late]);
  assert.equal(chain.sideOutput(0, 'late', 'r', 1), false);
  assert.equal(chain.sideOutput(1, 'unknown', 'r', 1), false);
  await chain.processBatch(['x'], undefined);
  assert.deepEqual(late.events, []);
});

test('advanceWatermark calls processWatermark in chain order, runs what an operator emits through the operators after it, then broadcasts the watermark', async () => {
  const log: string[] = [];
  const main = new FakeRecordWriter();
  const side = new FakeRecordWriter({ outputTag: 'late' });
  const window = new LoggingOperator('window', log, {
    watermark: (watermark) => {
      window.outputTimestamps = [watermark - 1];
      return [`fired at ${watermark}`];
    },
  });
  const { chain, metrics } = chainOf([window, new LoggingOperator('sink', log)], [main, side]);
  await chain.advanceWatermark(10);
  assert.deepEqual(log, ['window.watermark(10)', 'sink.batch(["fired at 10"])', 'sink.watermark(10)']);
  assert.deepEqual(main.events, [
    { kind: 'records', records: ['fired at 10'], timestamps: [9] },
    { kind: 'watermark', watermark: 10 },
  ]);
  assert.deepEqual(side.trace, ['watermark 10'], 'watermarks go to every output');
  assert.equal(chain.currentWatermark, 10);
  assert.equal(metrics.watermark, 10);
});

test('a watermark not above the current one is ignored', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf([new LoggingOperator('op', log)], [writer]);
  await chain.advanceWatermark(10);
  await chain.advanceWatermark(10);
  await chain.advanceWatermark(5);
  assert.deepEqual(log, ['op.watermark(10)']);
  assert.deepEqual(writer.trace, ['watermark 10']);
  assert.equal(chain.currentWatermark, 10);
});

test('watermark statuses go to every output once per change, and a watermark after idleness announces the output active first', async () => {
  const main = new FakeRecordWriter();
  const side = new FakeRecordWriter({ outputTag: 'late' });
  const { chain } = chainOf([new LoggingOperator('op', [])], [main, side]);
  chain.broadcastWatermarkStatus(false);
  assert.deepEqual(main.events, [], 'the output starts active');
  chain.broadcastWatermarkStatus(true);
  chain.broadcastWatermarkStatus(true);
  await chain.advanceWatermark(20);
  await chain.advanceWatermark(30);
  assert.deepEqual(main.trace, ['idle', 'active', 'watermark 20', 'watermark 30']);
  assert.deepEqual(side.trace, main.trace);
});

test('endInput fires the end of event time, then each operator endInput in order (its output through the rest), then end of data', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf([new LoggingOperator('buffer', log, { endInput: () => ['held'] }), new LoggingOperator('sink', log)], [writer]);
  await chain.endInput();
  assert.deepEqual(log, ['buffer.watermark(Infinity)', 'sink.watermark(Infinity)', 'buffer.endInput()', 'sink.batch(["held"])', 'sink.endInput()']);
  assert.deepEqual(writer.trace, ['watermark Infinity', '["held"]', 'end']);
});

test('endInput after the watermark reached +Infinity does not send it again', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf([new LoggingOperator('op', log)], [writer]);
  await chain.advanceWatermark(Number.POSITIVE_INFINITY);
  await chain.endInput();
  assert.deepEqual(writer.trace, ['watermark Infinity', 'end']);
  assert.deepEqual(log, ['op.watermark(Infinity)', 'op.endInput()']);
});

test('a processing-time callback calls its operator only, and what it emits goes through the rest of the chain', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const { chain } = chainOf(
    [new LoggingOperator('head', log), new LoggingOperator('timer', log, { processingTime: (now) => [now] }), new LoggingOperator('sink', log)],
    [writer],
  );
  await chain.onProcessingTime(1, 42);
  assert.deepEqual(log, ['timer.processingTime(42)', 'sink.batch([42])']);
  assert.deepEqual(writer.trace, ['[42]']);
});

test('snapshot, completion, abort and close hooks run in chain order', async () => {
  const log: string[] = [];
  const { chain } = chainOf([new LoggingOperator('a', log), new LoggingOperator('b', log)]);
  await chain.snapshotState(3);
  await chain.notifyCheckpointComplete(3);
  await chain.notifyCheckpointAborted(4);
  await chain.close();
  assert.deepEqual(log, [
    'a.snapshotState(3)',
    'b.snapshotState(3)',
    'a.notifyCheckpointComplete(3)',
    'b.notifyCheckpointComplete(3)',
    'a.notifyCheckpointAborted(4)',
    'b.notifyCheckpointAborted(4)',
    'a.close()',
    'b.close()',
  ]);
});

test('barriers go to every writer, side outputs included', () => {
  const main = new FakeRecordWriter();
  const side = new FakeRecordWriter({ outputTag: 'late' });
  const { chain } = chainOf([], [main, side]);
  chain.broadcastBarrier(locationOf(5));
  assert.deepEqual(main.trace, ['barrier 5']);
  assert.deepEqual(side.trace, ['barrier 5']);
});

test('outputs are available only while every writer, side outputs included, has credit', () => {
  const main = new FakeRecordWriter();
  const side = new FakeRecordWriter({ outputTag: 'late' });
  const { chain } = chainOf([], [main, side]);
  assert.equal(chain.outputsAvailable, true);
  side.available = false;
  assert.equal(chain.outputsAvailable, false);
  side.available = true;
  main.available = false;
  assert.equal(chain.outputsAvailable, false);
});

test('a chain without operators passes a batch straight to its writers', async () => {
  const writer = new FakeRecordWriter();
  const { chain, metrics } = chainOf([], [writer]);
  await chain.processBatch([1, 2], [5, 6]);
  assert.deepEqual(writer.events, [{ kind: 'records', records: [1, 2], timestamps: [5, 6] }]);
  assert.equal(metrics.recordsOut, 2);
});

/** An operator that holds watermarks back (as async I/O does) and emits on its own through the chain. */
class HoldingOperator extends LoggingOperator {
  override readonly holdsWatermarks = true;
}

test('an operator that holds watermarks stops them in the chain; what it emits later (records, then the watermark) runs through the rest of the chain in order', async () => {
  const log: string[] = [];
  const writer = new FakeRecordWriter();
  const holding = new HoldingOperator('async', log, { batch: () => [] });
  const { chain } = chainOf([new LoggingOperator('before', log), holding, new LoggingOperator('after', log, { batch: double })], [writer]);
  await chain.processBatch([1, 2], undefined);
  await chain.advanceWatermark(100);
  assert.deepEqual(log, ['before.batch([1,2])', 'async.batch([1,2])', 'before.watermark(100)', 'async.watermark(100)']);
  assert.deepEqual(writer.trace, [], 'the watermark waits behind the records held');
  assert.equal(chain.currentWatermark, Number.NEGATIVE_INFINITY);
  await chain.emitFrom(1, [1, 2], [10, 20]);
  await chain.emitWatermarkFrom(1, 100);
  assert.deepEqual(log.slice(4), ['after.batch([1,2])', 'after.watermark(100)']);
  assert.deepEqual(writer.trace, ['[2,4]', 'watermark 100']);
  assert.equal(chain.currentWatermark, 100);
  await chain.advanceWatermark(100);
  assert.equal(log.length, 6, 'a watermark not above the input one is not run again');
});
