import type pg from 'pg';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { StreamOperator } from '../../core/operator/stream-operator.ts';
import { connectPostgres, type PostgresQuery, sendInOrder, settleWrites } from './postgres-connection.ts';
import { postgresFailure } from './postgres-errors.ts';
import type { ParsedPostgresSinkOptions, PostgresRow } from './postgres-sink-options.ts';
import { InsertStatements } from './postgres-statements.ts';

/**
 * The PostgreSQL sink's operator for `at-least-once`, for servers without prepared transactions
 * (Flink's JDBC sink without XA): each subtask writes its rows in one plain database transaction
 * (multi-row INSERTs, as the exactly-once sink), committed at the barrier (and when the input
 * ends), so everything before a barrier is in the table when the checkpoint completes. After a
 * failure the job restarts from the latest completed checkpoint and the rows since are written
 * again, some of them a second time when their transaction had committed (its barrier passed, its
 * checkpoint did not complete): duplicates in mode `append`; in mode `upsert` the second write
 * sets a key's row to the same values, in the same order per key, so the table ends exact.
 * Nothing is held across a barrier (no row locks outlive it), so the next checkpoint's rows never
 * wait for a commit.
 */
export class AtLeastOncePostgresWriter<T, R extends PostgresRow> extends StreamOperator<T, never> {
  readonly #options: ParsedPostgresSinkOptions<T, R>;
  readonly #statements: InsertStatements;
  #client: pg.Client | undefined;
  #where = 'postgres sink';
  /** Whether BEGIN has been sent for the transaction being written. */
  #began = false;
  /** The statements of the latest batch, still running while the task goes on (awaited by the next batch and the barrier). */
  #inFlight: Promise<unknown> | undefined;

  constructor(options: ParsedPostgresSinkOptions<T, R>) {
    super();
    this.#options = options;
    this.#statements = new InsertStatements(options.table, options.columns, options.mode === 'upsert' ? options.key : undefined, options.batchSize);
  }

  override async open(context: OperatorContext): Promise<void> {
    this.#where = `postgres sink "${context.uid}" (subtask ${context.subtaskIndex})`;
    this.#client = await connectPostgres(
      this.#options.connectionString,
      `weir ${context.jobName}/${context.uid}-${context.subtaskIndex}`.slice(0, 63),
      this.#where,
    );
  }

  async processBatch(batch: T[]): Promise<never[]> {
    if (batch.length === 0) return [];
    const rows = new Array<PostgresRow>(batch.length);
    for (let i = 0; i < batch.length; i++) rows[i] = this.#options.toRow(batch[i] as T);
    // One batch in flight: the previous one's statements must have succeeded before more are sent.
    await this.#settle('writing rows');
    const client = this.#client as pg.Client;
    const queries: PostgresQuery[] = [];
    if (!this.#began) {
      queries.push('BEGIN');
      this.#began = true;
    }
    for (const statement of this.#statements.statements(rows)) {
      queries.push(statement.name === undefined ? { text: statement.text, values: statement.values } : statement);
    }
    const inFlight = sendInOrder(client, queries);
    inFlight.catch(() => {});
    this.#inFlight = inFlight;
    return [];
  }

  /** The barrier: everything before it committed before the subtask acknowledges the checkpoint. */
  override async snapshotState(): Promise<void> {
    await this.#commit();
  }

  /** The input has ended: commit the rest (a job without checkpoints commits only here). */
  override async endInput(): Promise<never[]> {
    await this.#commit();
    return [];
  }

  async #commit(): Promise<void> {
    await this.#settle('writing rows');
    if (!this.#began) return;
    this.#began = false;
    try {
      await (this.#client as pg.Client).query('COMMIT');
    } catch (error) {
      throw postgresFailure(this.#where, 'COMMIT', error);
    }
  }

  async #settle(what: string): Promise<void> {
    const inFlight = this.#inFlight;
    this.#inFlight = undefined;
    await settleWrites(inFlight, this.#where, what);
  }

  /** What was not committed is rolled back (a lost connection rolls back by itself): the restart writes it again. */
  override async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    await this.#inFlight?.catch(() => {});
    this.#inFlight = undefined;
    if (this.#began) await client.query('ROLLBACK').catch(() => {});
    this.#began = false;
    await client.end().catch(() => {});
  }
}
