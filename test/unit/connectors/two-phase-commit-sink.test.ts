import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  COMMITTABLE_STATE_VERSION,
  dataLoss,
  type RecoveryContext,
  type TwoPhaseCommitLogic,
  TwoPhaseCommitSinkOperator,
} from '../../../src/connectors/two-phase-commit-sink.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import type { OperatorContext } from '../../../src/core/operator/stream-operator.ts';
import { TaskMetrics } from '../../../src/runtime/metrics/task-metrics.ts';
import { OperatorStateBackend } from '../../../src/state/operator-state-backend.ts';
import { testOperatorContext } from '../../harness/operator-context.ts';

interface Transaction {
  id: string;
  records: string[];
}

interface Committable {
  id: string;
  records: string[];
}

/** An external system with transactions: what is committed is visible, once per transaction however often it is committed. */
class FakeBroker {
  readonly log: string[] = [];
  /** Committed transactions, in commit order. */
  readonly visible: Committable[] = [];
  readonly commitCalls: string[] = [];
  readonly aborted: string[] = [];
  readonly recoveries: RecoveryContext<Committable>[] = [];
  #next = 0;

  logicFor(
    subtaskIndex: number,
    options: { failCommit?: (committable: Committable) => Error | undefined } = {},
  ): TwoPhaseCommitLogic<string, Transaction, Committable> {
    return {
      beginTransaction: () => {
        const transaction = { id: `s${subtaskIndex}-t${this.#next++}`, records: [] };
        this.log.push(`begin ${transaction.id}`);
        return transaction;
      },
      write: (transaction, batch) => {
        transaction.records.push(...batch);
      },
      preCommit: (transaction, checkpointId) => {
        if (transaction.records.length === 0) return null;
        this.log.push(`preCommit ${transaction.id} for ${checkpointId}`);
        return { id: transaction.id, records: [...transaction.records] };
      },
      commit: (committable) => {
        const failure = options.failCommit?.(committable);
        if (failure !== undefined) throw failure;
        this.commitCalls.push(committable.id);
        this.log.push(`commit ${committable.id}`);
        if (!this.visible.some((entry) => entry.id === committable.id)) this.visible.push(committable);
      },
      abort: (transaction) => {
        this.aborted.push(transaction.id);
        this.log.push(`abort ${transaction.id}`);
      },
      isEmpty: (transaction) => transaction.records.length === 0,
      abortLingering: (context) => {
        this.recoveries.push(context);
        return context.restoredCheckpointId === undefined ? 0 : 1;
      },
      notifyCheckpointComplete: (checkpointId) => {
        this.log.push(`notified ${checkpointId}`);
      },
      close: () => {
        this.log.push(`close s${subtaskIndex}`);
      },
    };
  }

  /** Every record visible downstream, in commit order. */
  get output(): string[] {
    return this.visible.flatMap((entry) => entry.records);
  }
}

interface Opened {
  operator: TwoPhaseCommitSinkOperator<string, Transaction, Committable>;
  state: OperatorStateBackend;
  metrics: TaskMetrics;
}

function contextFor(
  state: OperatorStateBackend,
  metrics: TaskMetrics,
  options: { subtaskIndex?: number; parallelism?: number; restoredCheckpointId?: number; restoredTransactionsCommitted?: boolean; supersededBy?: number },
): OperatorContext {
  return testOperatorContext({
    subtaskIndex: options.subtaskIndex ?? 0,
    parallelism: options.parallelism ?? 1,
    attemptNumber: options.restoredCheckpointId === undefined ? 0 : 1,
    restoredCheckpointId: options.restoredCheckpointId,
    restoredTransactionsCommitted: options.restoredTransactionsCommitted ?? false,
    restoredCheckpointSupersededBy: options.supersededBy,
    operatorState: state,
    metrics: metrics.group('sink'),
  });
}

async function openSink(
  broker: FakeBroker,
  options: {
    subtaskIndex?: number;
    parallelism?: number;
    state?: OperatorStateBackend;
    restoredCheckpointId?: number;
    restoredTransactionsCommitted?: boolean;
    supersededBy?: number;
    failCommit?: (committable: Committable) => Error | undefined;
  } = {},
): Promise<Opened> {
  const subtaskIndex = options.subtaskIndex ?? 0;
  const state = options.state ?? new OperatorStateBackend();
  const metrics = new TaskMetrics();
  const operator = new TwoPhaseCommitSinkOperator(broker.logicFor(subtaskIndex, { failCommit: options.failCommit }));
  await operator.open(contextFor(state, metrics, options));
  return { operator, state, metrics };
}

const pendingOf = (state: OperatorStateBackend) =>
  state.getUnionListState<{ version: number; checkpointId: number; subtaskIndex: number; committable: Committable }>('pending-committables').get();

const counter = (metrics: TaskMetrics, name: string) => metrics.snapshot(0, 0, Date.now()).operators[`sink.${name}`];

test('records go into the current transaction and nothing is visible before a checkpoint completes', async () => {
  const broker = new FakeBroker();
  const { operator } = await openSink(broker);
  assert.deepEqual(await operator.processBatch(['a', 'b']), []);
  await operator.processBatch(['c']);
  await operator.snapshotState(1);
  assert.deepEqual(broker.log, ['begin s0-t0', 'preCommit s0-t0 for 1', 'begin s0-t1']);
  assert.deepEqual(broker.output, []);
});

test('snapshotState pre-commits the transaction, keeps its committable in the union list state and begins the next one', async () => {
  const broker = new FakeBroker();
  const { operator, state, metrics } = await openSink(broker, { subtaskIndex: 2, parallelism: 3 });
  await operator.processBatch(['a']);
  await operator.snapshotState(7);
  assert.deepEqual(pendingOf(state), [{ version: 1, checkpointId: 7, subtaskIndex: 2, committable: { id: 's2-t0', records: ['a'] } }]);
  // A sink whose committables changed meaning writes its own version (the PostgreSQL sink: 2), which an older Weir refuses.
  const versioned = new OperatorStateBackend();
  const sink = new TwoPhaseCommitSinkOperator({ ...broker.logicFor(0, {}), committableVersion: 2 });
  await sink.open(contextFor(versioned, new TaskMetrics(), {}));
  await sink.processBatch(['b']);
  await sink.snapshotState(8);
  assert.deepEqual(
    pendingOf(versioned).map((entry) => entry.version),
    [2],
  );
  const snapshot = state.snapshot();
  const restored = OperatorStateBackend.restoreFor([snapshot], 1, 0);
  assert.equal(pendingOf(restored).length, 1, 'the state kind is union (restoreFor gives it in full)');
  await operator.processBatch(['b']);
  await operator.snapshotState(8);
  assert.deepEqual(
    pendingOf(state).map((entry) => [entry.checkpointId, entry.committable.records]),
    [
      [7, ['a']],
      [8, ['b']],
    ],
  );
  assert.equal(counter(metrics, 'transactions.preCommitted'), 2);
  assert.equal(counter(metrics, 'transactions.pending'), 2);
  assert.equal(counter(metrics, 'transactions.open'), 0);
  await operator.processBatch(['c']);
  assert.equal(counter(metrics, 'transactions.open'), 1);
});

test('notifyCheckpointComplete(N) commits every pending committable up to N, in order, and none above N', async () => {
  const broker = new FakeBroker();
  const { operator, metrics } = await openSink(broker);
  for (const id of [1, 2, 3]) {
    await operator.processBatch([`r${id}`]);
    await operator.snapshotState(id);
  }
  await operator.notifyCheckpointComplete(2);
  assert.deepEqual(broker.commitCalls, ['s0-t0', 's0-t1']);
  assert.deepEqual(broker.output, ['r1', 'r2']);
  assert.equal(counter(metrics, 'transactions.pending'), 1);
  await operator.notifyCheckpointComplete(1);
  assert.deepEqual(broker.commitCalls, ['s0-t0', 's0-t1'], 'an older completion commits nothing again');
  await operator.notifyCheckpointComplete(3);
  assert.deepEqual(broker.output, ['r1', 'r2', 'r3']);
  assert.equal(counter(metrics, 'transactions.committed'), 3);
  assert.deepEqual(
    broker.log.filter((line) => line.startsWith('notified')),
    ['notified 2', 'notified 1', 'notified 3'],
  );
});

test('the committable of an aborted checkpoint stays pending and is committed, in order, by the next completed one', async () => {
  const broker = new FakeBroker();
  const { operator, state } = await openSink(broker);
  await operator.processBatch(['r1']);
  await operator.snapshotState(1);
  await operator.notifyCheckpointAborted(1);
  await operator.processBatch(['r2']);
  await operator.snapshotState(2);
  assert.deepEqual(
    pendingOf(state).map((entry) => entry.checkpointId),
    [1, 2],
    'checkpoint 2 holds the committable of 1 too',
  );
  await operator.notifyCheckpointComplete(2);
  assert.deepEqual(broker.commitCalls, ['s0-t0', 's0-t1']);
  assert.deepEqual(broker.output, ['r1', 'r2']);
});

test('an empty transaction (preCommit returns null) is not checkpointed', async () => {
  const broker = new FakeBroker();
  const { operator, state, metrics } = await openSink(broker);
  await operator.snapshotState(1);
  assert.deepEqual(pendingOf(state), []);
  assert.equal(counter(metrics, 'transactions.preCommitted'), 0);
  await operator.notifyCheckpointComplete(1);
  assert.deepEqual(broker.commitCalls, []);
});

/**
 * Subtasks 0..parallelism-1 write, checkpoint 1 completes, they write again, and checkpoint 2's
 * barrier passes (its metadata written: the operator state snapshots are taken), then more is
 * written after the barrier; the subtasks crash before "checkpoint 2 complete" reaches them.
 */
async function completeThenCrash(broker: FakeBroker, parallelism: number): Promise<Uint8Array[]> {
  const sinks = await Promise.all(Array.from({ length: parallelism }, (_, subtaskIndex) => openSink(broker, { subtaskIndex, parallelism })));
  for (const [index, sink] of sinks.entries()) {
    await sink.operator.processBatch([`cp1-${index}`]);
    await sink.operator.snapshotState(1);
    await sink.operator.notifyCheckpointComplete(1);
    await sink.operator.processBatch([`cp2-${index}`]);
  }
  const snapshots: Uint8Array[] = [];
  for (const [index, sink] of sinks.entries()) {
    await sink.operator.snapshotState(2);
    snapshots.push(sink.state.snapshot());
    await sink.operator.processBatch([`after-barrier-${index}`]);
  }
  return snapshots;
}

for (const [before, after] of [
  [2, 2],
  [3, 2],
  [2, 3],
  [3, 1],
]) {
  test(`complete then crash, ${before} -> ${after} subtasks: the restored subtasks commit checkpoint 2 exactly once between them, and nothing written after its barrier`, async () => {
    const broker = new FakeBroker();
    const snapshots = await completeThenCrash(broker, before as number);
    assert.deepEqual(broker.output.sort(), Array.from({ length: before as number }, (_, i) => `cp1-${i}`).sort());
    broker.commitCalls.length = 0;
    broker.recoveries.length = 0;

    const restored = await Promise.all(
      Array.from({ length: after as number }, (_, subtaskIndex) =>
        openSink(broker, {
          subtaskIndex,
          parallelism: after,
          restoredCheckpointId: 2,
          state: OperatorStateBackend.restoreFor(snapshots, after as number, subtaskIndex),
        }),
      ),
    );
    const checkpoint2 = Array.from({ length: before as number }, (_, i) => `s${i}-t`);
    assert.equal(broker.commitCalls.length, before, 'one commit per committable of checkpoint 2');
    assert.equal(new Set(broker.commitCalls).size, before, 'no committable is committed twice');
    for (const prefix of checkpoint2)
      assert.ok(
        broker.commitCalls.some((id) => id.startsWith(prefix)),
        `${prefix}… is committed`,
      );
    const expected = [...Array.from({ length: before as number }, (_, i) => `cp1-${i}`), ...Array.from({ length: before as number }, (_, i) => `cp2-${i}`)];
    assert.deepEqual([...broker.output].sort(), expected.sort());
    assert.ok(!broker.output.some((record) => record.startsWith('after-barrier')), 'the transaction after the barrier is lost, as it must be');

    assert.equal(broker.recoveries.length, after);
    for (const [subtaskIndex, recovery] of [...broker.recoveries].sort((a, b) => a.subtaskIndex - b.subtaskIndex).entries()) {
      assert.equal(recovery.subtaskIndex, subtaskIndex);
      assert.equal(recovery.parallelism, after);
      assert.equal(recovery.restoredCheckpointId, 2);
      assert.deepEqual(
        recovery.allRestoredCommittables.map((committable) => committable.records[0]).sort(),
        Array.from({ length: before as number }, (_, i) => `cp2-${i}`).sort(),
      );
    }
    for (const sink of restored) {
      assert.deepEqual(pendingOf(sink.state), [], 'what was restored is committed, not kept');
      assert.equal(counter(sink.metrics, 'transactions.aborted'), 1, 'what abortLingering aborted is counted');
    }

    for (const [index, sink] of restored.entries()) {
      await sink.operator.processBatch([`cp3-${index}`]);
      await sink.operator.snapshotState(3);
      await sink.operator.notifyCheckpointComplete(3);
    }
    assert.equal(broker.output.filter((record) => record.startsWith('cp3')).length, after);
    assert.equal(new Set(broker.output).size, broker.output.length, 'no record is visible twice');
  });
}

test('each restored subtask commits its share (old subtask % new parallelism), in checkpoint order', async () => {
  const broker = new FakeBroker();
  const old = await Promise.all([0, 1, 2].map((subtaskIndex) => openSink(broker, { subtaskIndex, parallelism: 3 })));
  const snapshots: Uint8Array[] = [];
  for (const [index, sink] of old.entries()) {
    for (const checkpointId of [4, 5]) {
      await sink.operator.processBatch([`${index}@${checkpointId}`]);
      await sink.operator.snapshotState(checkpointId);
    }
    snapshots.push(sink.state.snapshot());
  }
  const committedBy: string[][] = [];
  for (const subtaskIndex of [0, 1]) {
    const before = broker.commitCalls.length;
    await openSink(broker, { subtaskIndex, parallelism: 2, restoredCheckpointId: 5, state: OperatorStateBackend.restoreFor(snapshots, 2, subtaskIndex) });
    committedBy.push(broker.visible.slice(before).flatMap((entry) => entry.records));
  }
  assert.deepEqual(committedBy, [
    ['0@4', '2@4', '0@5', '2@5'],
    ['1@4', '1@5'],
  ]);
});

test('a commit that finds its data gone (DATA_LOSS) during restore fails open', async () => {
  const broker = new FakeBroker();
  const [snapshot] = await completeThenCrash(broker, 1);
  const lost = dataLoss('the pre-committed data is gone', 'restore it');
  await assert.rejects(
    openSink(broker, { restoredCheckpointId: 2, state: OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0), failCommit: () => lost }),
    (error: unknown) => error === lost && error instanceof WeirError && error.code === 'DATA_LOSS' && error.retriable === false,
  );
});

test('an older checkpoint restored on purpose (a later one completed): a "gone" answer to its commit is no DATA_LOSS', async () => {
  const broker = new FakeBroker();
  const [snapshot] = await completeThenCrash(broker, 1);
  const lost = dataLoss('the id carries a newer transaction', 'x');
  const { operator } = await openSink(broker, {
    restoredCheckpointId: 2,
    supersededBy: 9,
    state: OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0),
    failCommit: () => lost,
  });
  assert.ok(operator, 'the sink opened');
  assert.equal(broker.recoveries.at(-1)?.restoredCheckpointId, 2, 'lingering transactions were still aborted');
  assert.deepEqual(broker.recoveries.at(-1)?.allRestoredCommittables, [], 'an id answered "gone" is not held: a newer transaction open on it is aborted');
  // Other failures still fail the open.
  const broken = new Error('broker down');
  await assert.rejects(
    openSink(broker, {
      restoredCheckpointId: 2,
      supersededBy: 9,
      state: OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0),
      failCommit: () => broken,
    }),
    (error: unknown) => error === broken,
  );
});

test("at the job's end a fresh operator commits what the latest checkpoint holds and aborts what lingers, even after a failed commit", async () => {
  const broker = new FakeBroker();
  const [snapshot] = await completeThenCrash(broker, 1);
  broker.commitCalls.length = 0;
  broker.recoveries.length = 0;
  const state = OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0);
  await new TwoPhaseCommitSinkOperator(broker.logicFor(0)).finishAtJobEnd(contextFor(state, new TaskMetrics(), { restoredCheckpointId: 2 }));
  assert.deepEqual(broker.commitCalls, ['s0-t1']);
  assert.equal(broker.recoveries.length, 1, 'lingering transactions aborted');
  assert.equal(broker.log.at(-1), 'close s0', 'the logic is closed, no transaction begun');

  broker.recoveries.length = 0;
  const lost = dataLoss('gone', 'x');
  await assert.rejects(
    new TwoPhaseCommitSinkOperator(broker.logicFor(0, { failCommit: () => lost })).finishAtJobEnd(
      contextFor(OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0), new TaskMetrics(), { restoredCheckpointId: 2 }),
    ),
    (error: unknown) => error === lost,
  );
  assert.equal(broker.recoveries.length, 1, 'lingering transactions aborted despite the failed commit');
});

test('a restore from a savepoint whose transactions were committed commits nothing again', async () => {
  const broker = new FakeBroker();
  const [snapshot] = await completeThenCrash(broker, 1);
  broker.commitCalls.length = 0;
  broker.recoveries.length = 0;
  const { state } = await openSink(broker, {
    restoredCheckpointId: 2,
    restoredTransactionsCommitted: true,
    state: OperatorStateBackend.restoreFor([snapshot as Uint8Array], 1, 0),
  });
  assert.deepEqual(broker.commitCalls, []);
  assert.deepEqual(broker.recoveries[0]?.allRestoredCommittables, []);
  assert.deepEqual(pendingOf(state), []);
});

test('committables of a newer state version are refused with UNSUPPORTED_STATE_VERSION, and nothing is committed', async () => {
  const broker = new FakeBroker();
  const old = new OperatorStateBackend();
  old.getUnionListState('pending-committables').update([
    { version: COMMITTABLE_STATE_VERSION, checkpointId: 1, subtaskIndex: 0, committable: { id: 'old', records: ['x'] } },
    { version: COMMITTABLE_STATE_VERSION + 1, checkpointId: 1, subtaskIndex: 0, committable: { id: 'new', records: ['y'] } },
  ]);
  await assert.rejects(openSink(broker, { restoredCheckpointId: 1, state: OperatorStateBackend.restoreFor([old.snapshot()], 1, 0) }), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'UNSUPPORTED_STATE_VERSION');
    assert.match(error.message, new RegExp(`sink "sink" holds committables of version ${COMMITTABLE_STATE_VERSION + 1}`));
    return true;
  });
  assert.deepEqual(broker.commitCalls, []);
});

test('close() aborts the open transaction and closes the logic', async () => {
  const broker = new FakeBroker();
  const { operator, metrics } = await openSink(broker);
  await operator.processBatch(['a']);
  await operator.close();
  assert.deepEqual(broker.aborted, ['s0-t0']);
  assert.deepEqual(broker.log.slice(-2), ['abort s0-t0', 'close s0']);
  assert.equal(counter(metrics, 'transactions.aborted'), 1);
  assert.deepEqual(broker.output, []);
});

test('close() of a sink whose transaction is empty aborts it without counting it', async () => {
  const broker = new FakeBroker();
  const { operator, metrics } = await openSink(broker);
  await operator.close();
  assert.deepEqual(broker.aborted, ['s0-t0']);
  assert.equal(counter(metrics, 'transactions.aborted'), 0);
});
