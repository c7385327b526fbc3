/**
 * Runs of one subtask of the exactly-once PostgreSQL sink against a real PostgreSQL, opened and
 * recovered as TwoPhaseCommitSinkOperator opens and recovers them: for tests of a task with two
 * owners at once (cluster mode: a fenced owner that has not stopped yet, a zombie, and the task's
 * next owner), which restored the same checkpoint, read the same input and reach the same
 * checkpoint ids.
 */

import { ExactlyOncePostgresWriter } from '../../src/connectors/postgres/exactly-once-postgres-writer.ts';
import type { PostgresCommittable } from '../../src/connectors/postgres/postgres-committable.ts';
import { connectPostgres } from '../../src/connectors/postgres/postgres-connection.ts';
import { parsePostgresSinkOptions } from '../../src/connectors/postgres/postgres-sink-options.ts';
import type { OperatorContext } from '../../src/core/operator/stream-operator.ts';
import type { TaskOwner } from '../../src/core/operator/task-owner.ts';
import type { PostgresTestServer } from './postgres-server.ts';

export type Total = { seq: number; account: string; total: number };
export type SinkRun = ExactlyOncePostgresWriter<Total, Total>;

/** The subtask (task) the runs are of, and the parallelism (task count). */
export const TASK = 9;
export const TASKS = 12;

/** The same input from the same restored state: every owner computes these rows. */
export const rows: Total[] = [
  { seq: 7, account: 'a7', total: 8 },
  { seq: 19, account: 'a19', total: 6 },
];

/**
 * One run of the task's sink, opened as a restore opens it (its recovery done by the caller):
 * `connect` wraps its connections; `taskOwner` is the producer a cluster task's run was fenced in
 * with (none: a run of one process).
 */
export async function sinkRun(
  server: PostgresTestServer,
  table: string,
  options: { connect?: typeof connectPostgres; mode?: 'append' | 'upsert'; taskOwner?: TaskOwner } = {},
): Promise<SinkRun> {
  const { connect = connectPostgres, mode = 'append', taskOwner } = options;
  const parsed = parsePostgresSinkOptions<Total, Total>({
    connectionString: server.connectionString,
    table,
    columns: ['seq', 'account', 'total'],
    ...(mode === 'upsert' ? { mode, key: ['account'] } : { mode }),
    toRow: (record) => record,
  });
  const writer = new ExactlyOncePostgresWriter(parsed, connect);
  const context = { jobName: 'stale-owner', uid: 'totals-sink', subtaskIndex: TASK, parallelism: TASKS, taskOwner, metrics: { gauge() {} } };
  await writer.open(context as unknown as OperatorContext);
  return writer;
}

/** What a restore of a record holding `committables` does (TwoPhaseCommitSinkOperator's recovery): commit them again, roll back the rest. */
export async function recover(writer: SinkRun, committables: PostgresCommittable[]): Promise<void> {
  for (const committable of committables) await writer.commit(committable);
  await writer.abortLingering({ subtaskIndex: TASK, parallelism: TASKS, restoredCheckpointId: 2, allRestoredCommittables: committables });
}

/** A checkpoint's transaction of a run: `rows` written and prepared. */
export async function prepare(writer: SinkRun, checkpointId: number): Promise<PostgresCommittable> {
  const transaction = writer.beginTransaction();
  await writer.write(transaction, rows);
  return (await writer.preCommit(transaction, checkpointId)) as PostgresCommittable;
}

/** The rows a reader sees: how many of each seq. */
export async function copies(server: PostgresTestServer, table: string): Promise<[number, number][]> {
  const counted = await server.query<{ seq: string; n: string }>(`SELECT seq, count(*) AS n FROM ${table} GROUP BY seq ORDER BY seq`);
  return counted.map((row) => [Number(row.seq), Number(row.n)]);
}

export async function preparedGids(server: PostgresTestServer): Promise<string[]> {
  return (await server.query<{ gid: string }>('SELECT gid FROM pg_prepared_xacts ORDER BY gid')).map((row) => row.gid);
}
