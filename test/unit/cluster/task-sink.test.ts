/** Which sinks a cluster task runs, and how (task-sink.ts): the refusal names the sink and the ways out. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TASK_CHECKPOINT_VERSION } from '../../../src/cluster/task-checkpoint.ts';
import { taskRestoreInfo } from '../../../src/cluster/task-checkpoint-record.ts';
import { taskSinkKind } from '../../../src/cluster/task-sink.ts';
import { fileSink } from '../../../src/connectors/file/file-sink.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { postgresSink } from '../../../src/connectors/postgres/postgres-sink.ts';
import { twoPhaseCommitSink } from '../../../src/connectors/two-phase-commit-sink.ts';
import type { Sink } from '../../../src/core/connector/sink.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { StreamOperator } from '../../../src/core/operator/stream-operator.ts';

class Discarding extends StreamOperator<unknown, never> {
  processBatch(): never[] {
    return [];
  }
}

const postgres = (deliveryGuarantee: 'exactly-once' | 'at-least-once') =>
  postgresSink<{ k: string }>({
    connectionString: 'postgres://u@127.0.0.1:1/db',
    table: 't',
    columns: ['k'],
    toRow: (r) => r,
    mode: 'append',
    deliveryGuarantee,
  });

test('an exactly-once Kafka sink writes into the task transaction; file, PostgreSQL and any twoPhaseCommitSink run their two-phase commit', () => {
  const serializer = (record: unknown) => ({ key: null, value: JSON.stringify(record) });
  assert.equal(taskSinkKind(kafkaSink({ topic: 't', serializer, deliveryGuarantee: 'exactly-once' }) as Sink<unknown>, 'k'), 'transaction');
  assert.equal(taskSinkKind(fileSink({ path: '/tmp/never-opened' }) as Sink<unknown>, 'f'), 'two-phase-commit');
  assert.equal(taskSinkKind(postgres('exactly-once') as Sink<unknown>, 'p'), 'two-phase-commit');
  const own = twoPhaseCommitSink<unknown, null, string>('own sink', () => ({
    beginTransaction: () => null,
    write: () => {},
    preCommit: () => null,
    commit: () => {},
    abort: () => {},
  }));
  assert.equal(taskSinkKind(own, 'o'), 'two-phase-commit');
});

test('at-least-once sinks run as in one process; an exactly-once sink that is neither is refused by its uid', () => {
  const serializer = (record: unknown) => ({ key: null, value: JSON.stringify(record) });
  assert.equal(taskSinkKind(kafkaSink({ topic: 't', serializer, deliveryGuarantee: 'at-least-once' }) as Sink<unknown>, 'k'), 'at-least-once');
  assert.equal(taskSinkKind(postgres('at-least-once') as Sink<unknown>, 'p'), 'at-least-once');
  const refused = taskSinkKind({ name: 'my sink', deliveryGuarantee: 'exactly-once', createOperator: () => new Discarding() }, 'mine');
  assert.ok(refused instanceof WeirError);
  assert.equal(refused.code, 'INVALID_CONFIG');
  assert.match(refused.message, /cluster mode cannot run sink "mine" \(my sink\): it is exactly-once, but it neither writes into a task's Kafka transaction/);
  assert.match(refused.hint ?? '', /deliveryGuarantee 'at-least-once'/);
});

test("a task restored from its record gives its two-phase-commit sinks the record's committables to commit (they may not be committed yet)", () => {
  const restore = taskRestoreInfo(
    {
      version: TASK_CHECKPOINT_VERSION,
      stage: 'totals',
      task: 2,
      checkpointId: 7,
      offsets: [],
      state: { location: '/s/chk-7', operators: [{ uid: 'sink', operator: { path: 'op', size: 10 } as never }] },
      watermark: null,
      member: { memberId: 'm', generationId: 3 },
      completedAt: 0,
    },
    undefined,
    12,
    2,
    6,
  );
  assert.equal(restore?.transactionsCommitted, false);
  assert.equal(restore?.checkpointId, 7);
});
