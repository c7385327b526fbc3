import type { Preflightable } from '../../core/connector/preflight.ts';
import type { Sink } from '../../core/connector/sink.ts';
import type { StreamOperator } from '../../core/operator/stream-operator.ts';
import { finishTransactionsAtJobEnd, TwoPhaseCommitSinkOperator } from '../two-phase-commit-sink.ts';
import { AtLeastOncePostgresWriter } from './at-least-once-postgres-writer.ts';
import { ExactlyOncePostgresWriter } from './exactly-once-postgres-writer.ts';
import { defaultGidPrefix } from './postgres-gid.ts';
import { postgresPreflight } from './postgres-preflight.ts';
import { type PostgresRow, type PostgresSinkOptions, parsePostgresSinkOptions } from './postgres-sink-options.ts';

/**
 * PostgreSQL sink, exactly-once through PostgreSQL's two-phase commit (Flink's JDBC exactly-once
 * sink, without XA): each subtask writes a checkpoint's rows in one database transaction, in
 * multi-row INSERTs (append, or upsert with ON CONFLICT (key) DO UPDATE); at the barrier the
 * transaction is prepared (`PREPARE TRANSACTION '<prefix>-<subtask>-<checkpoint id>-o<run>'`) and its gid
 * kept in the checkpoint; `COMMIT PREPARED` when the checkpoint completes. A restore commits what
 * the checkpoint holds and rolls back every other prepared transaction of the sink's prefix; so
 * does the job's end, however it ends (exactly-once-postgres-writer.ts).
 *
 * The server must allow prepared transactions (max_prepared_transactions > 0; PostgreSQL's
 * default is 0): the preflight refuses the job otherwise, and names a missing table, key or right.
 * `deliveryGuarantee: 'at-least-once'` is for servers without them: plain transactions committed
 * at each barrier (at-least-once-postgres-writer.ts), exact in its final state in mode 'upsert'.
 */
export function postgresSink<T, R extends PostgresRow = PostgresRow>(options: PostgresSinkOptions<T, R>): Sink<T> & Preflightable {
  // Validated once, here: a bad option fails when the job is built, naming the setting and the fix.
  const parsed = parsePostgresSinkOptions(options);
  const name = `postgres sink (${parsed.table})`;
  if (parsed.deliveryGuarantee === 'at-least-once') {
    return {
      name,
      deliveryGuarantee: 'at-least-once',
      preflight: (context) => postgresPreflight(parsed, context),
      createOperator: () => new AtLeastOncePostgresWriter(parsed) as unknown as StreamOperator<T, never>,
    };
  }
  const createOperator = () => new TwoPhaseCommitSinkOperator(new ExactlyOncePostgresWriter(parsed));
  return {
    name,
    deliveryGuarantee: parsed.deliveryGuarantee,
    preflight: (context) => postgresPreflight(parsed, context),
    exclusiveClaims: (context) => [
      {
        what: 'prepared transaction gid prefix',
        name: parsed.gidPrefix ?? defaultGidPrefix(context.jobName, context.uid),
        setting: 'gidPrefix',
      },
    ],
    createOperator: () => createOperator() as unknown as StreamOperator<T, never>,
    // At the job's end: commit what the latest completed checkpoint holds, roll back every other prepared transaction.
    onJobEnd: (subtasks) => finishTransactionsAtJobEnd(createOperator, subtasks),
  };
}
