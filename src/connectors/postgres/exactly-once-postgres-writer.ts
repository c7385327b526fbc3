import type pg from 'pg';
import { WeirError } from '../../core/errors/weir-error.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { ownerToken, type TaskOwner } from '../../core/operator/task-owner.ts';
import { dataLoss, type RecoveryContext, type TwoPhaseCommitLogic } from '../two-phase-commit-sink.ts';
import { type PostgresCommittable, type PostgresTransaction, xid32 } from './postgres-committable.ts';
import { connectPostgres, type PostgresQuery, sendInOrder, settleWrites } from './postgres-connection.ts';
import { postgresFailure, SQLSTATE, sqlStateOf } from './postgres-errors.ts';
import { defaultGidPrefix, gidLiteral, newRunToken, preparedTransactionGid, sinkSessionName, sinkSessionNameStart } from './postgres-gid.ts';
import { PostgresLockWatch } from './postgres-lock-watch.ts';
import { EARLIER_OWNERS_LOOK_MS, endOpenCarried, type PreparedScope, rollBackEarlierOwners, rollBackLingering } from './postgres-prepared.ts';
import type { ParsedPostgresSinkOptions, PostgresRow } from './postgres-sink-options.ts';
import { InsertStatements } from './postgres-statements.ts';
import { postgresTestDelay } from './postgres-test-delays.ts';

/**
 * The PostgreSQL sink's two-phase-commit logic (run by TwoPhaseCommitSinkOperator): one database
 * transaction per subtask per checkpoint on the subtask's writing connection, rows written with
 * multi-row INSERTs, `PREPARE TRANSACTION '<prefix>-<subtask>-<checkpoint>-o<run>'` at the barrier (the
 * rows durable, invisible, the connection free for the next transaction), `COMMIT PREPARED` on a
 * second connection when the checkpoint completes (COMMIT PREPARED cannot run inside the next
 * transaction).
 *
 * A prepared transaction keeps its row locks until COMMIT PREPARED, and the commit runs on the
 * task's own loop after the checkpoint completes: a statement of the next transaction that waited on
 * those locks (an upsert of the same key) would block the loop, so the commit could never run. So
 * no row is sent while a transaction this subtask prepared is not yet committed: rows that arrive
 * meanwhile are held in memory and sent once the commit is done. A barrier that finds rows held
 * behind a transaction still prepared (the barrier overtook the previous checkpoint's completion:
 * a checkpoint triggered as soon as that one completed, or the final one of a bounded job) opens
 * its transaction and takes its id, and carries the rows in its committable (the checkpoint's
 * state); they are written into that transaction and it is prepared as soon as the previous one
 * has committed (at the latest when its own commit comes: commits go in checkpoint order). A
 * second barrier while the carried transaction still waits (the previous checkpoint was aborted)
 * fails the task: the restart commits what the restored checkpoint holds and rolls back the rest.
 *
 * A commit is idempotent: a gid no longer prepared was committed before, unless its transaction
 * id says it was rolled back (then the data is gone: DATA_LOSS, never skipped). A gid names
 * (prefix, subtask, checkpoint) and the run (a random token per open; in cluster mode the producer
 * id and epoch the task's run was fenced in with, which orders a task's runs), so no two runs prepare
 * under the same name: in cluster mode a task's fenced owner that has not stopped yet (a zombie)
 * and its successor read the same input and reach the same checkpoint ids, and a recovery that
 * stalled after listing what lingers (a long GC, SIGSTOP) must roll back only what it listed, never
 * the transaction the task's next owner prepared since for the same checkpoint. A checkpoint of a
 * Weir before run tokens holds gids without one, which a zombie of that Weir may take again: so a
 * commit still commits the gid only while the committable's own transaction (its xid) is the one
 * prepared under it, never another. After a restore every other prepared transaction of this
 * sink's prefix that this subtask is responsible for (a gid the checkpoint holds included, when
 * another transaction holds it) is a crashed run's or a zombie's: rolled back; in cluster mode not a
 * later owner's (this run may have stood still between its fencing and its recovery), and at a
 * completed checkpoint (at most every {@link EARLIER_OWNERS_LOOK_MS}) the earlier owners'
 * transactions prepared since are rolled back too (postgres-prepared.ts).
 */
export class ExactlyOncePostgresWriter<T, R extends PostgresRow> implements TwoPhaseCommitLogic<T, PostgresTransaction, PostgresCommittable> {
  readonly #options: ParsedPostgresSinkOptions<T, R>;
  readonly #statements: InsertStatements;
  #writer: pg.Client | undefined;
  #committer: pg.Client | undefined;
  #prefix = '';
  #subtaskIndex = 0;
  /** This run's token, in every gid it prepares (postgres-gid.ts): a name is never used twice. */
  #run = '';
  /** Cluster mode: the producer this run of the task was fenced in with (its gids name it); undefined in one process. */
  #owner: TaskOwner | undefined;
  /** Cluster mode: when this run last looked for its earlier owners' prepared transactions. */
  #lookedAt = Number.NEGATIVE_INFINITY;
  #scope: PreparedScope = { prefix: '', subtaskIndex: 0, parallelism: 1, where: '' };
  /** The gids the restored checkpoint holds (each committed by the restore, or its carried rows written again): never an earlier owner's to roll back. */
  readonly #restoredGids = new Set<string>();
  #where = 'postgres sink';
  /** The gids this subtask prepared and has not committed yet, and the rows held back behind them. */
  readonly #prepared = new Set<string>();
  #held: PostgresRow[] = [];
  /** The transaction a barrier opened behind a prepared one (its gid in #prepared), and the rows it carries, not yet written. */
  #carrying: { gid: string; rows: PostgresRow[] } | undefined;
  /** Rows a restore found carried by a transaction never prepared, held to be written again (not yet sent). */
  #carriedAgain = 0;
  #current: PostgresTransaction | undefined;
  /** When the transaction being written began (the `transactionAge` gauge). */
  #openSince: number | undefined;
  /** The statements of the latest batch, still running while the task goes on (handled: awaited by the next write and the barrier). */
  #inFlight: Promise<unknown> | undefined;
  /** Cancels a write that waits on another run's prepared transaction (postgres-lock-watch.ts). */
  #lockWatch: PostgresLockWatch | undefined;

  readonly #connectTo: typeof connectPostgres;
  /** Version 2: its gids name their run (an older Weir refuses the checkpoint: it would not recognize them). */
  readonly committableVersion = 2;

  /** `connect`: how a connection is made (a unit test passes a fake). */
  constructor(options: ParsedPostgresSinkOptions<T, R>, connect: typeof connectPostgres = connectPostgres) {
    this.#connectTo = connect;
    this.#options = options;
    this.#statements = new InsertStatements(options.table, options.columns, options.mode === 'upsert' ? options.key : undefined, options.batchSize);
  }

  async open(context: OperatorContext): Promise<void> {
    this.#prefix = this.#options.gidPrefix ?? defaultGidPrefix(context.jobName, context.uid);
    this.#subtaskIndex = context.subtaskIndex;
    this.#owner = context.taskOwner;
    this.#run = this.#owner === undefined ? newRunToken() : ownerToken(this.#owner);
    this.#where = `postgres sink "${context.uid}" (subtask ${context.subtaskIndex})`;
    this.#scope = { prefix: this.#prefix, subtaskIndex: context.subtaskIndex, parallelism: context.parallelism, where: this.#where };
    // The sessions name the prefix: another job's preflight sees it in use (postgres-prefix-in-use.ts).
    this.#writer = await this.#connect(sinkSessionName(this.#prefix, context.subtaskIndex, 'write'));
    this.#committer = await this.#connect(sinkSessionName(this.#prefix, context.subtaskIndex, 'commit'));
    const { subtaskIndex, parallelism } = context;
    const connect = () => this.#connect(`${sinkSessionName(this.#prefix, subtaskIndex, 'commit')} watch`);
    this.#lockWatch = PostgresLockWatch.of(this.#writer, {
      connect,
      restoredGids: this.#restoredGids,
      prefix: this.#prefix,
      subtaskIndex,
      parallelism,
      run: this.#run,
      owner: this.#owner,
      where: this.#where,
    });
    context.metrics.gauge(`transactionAge/${context.subtaskIndex}/oldestMs`, () => (this.#openSince === undefined ? 0 : Date.now() - this.#openSince));
  }

  #connect(applicationName: string): Promise<pg.Client> {
    return this.#connectTo(this.#options.connectionString, applicationName, this.#where);
  }

  beginTransaction(): PostgresTransaction {
    this.#current = { began: false, rows: 0 }; // BEGIN waits for the first row: empty transactions cost nothing
    return this.#current;
  }

  async write(transaction: PostgresTransaction, batch: T[]): Promise<void> {
    if (batch.length === 0) return;
    const rows = new Array<PostgresRow>(batch.length);
    for (let i = 0; i < batch.length; i++) rows[i] = this.#options.toRow(batch[i] as T);
    if (this.#prepared.size > 0) {
      for (const row of rows) this.#held.push(row); // behind the prepared transaction's locks: sent after its commit
      return;
    }
    await this.#send(transaction, this.#takeHeld(rows));
  }

  /** The held rows, then these. */
  #takeHeld(rows: PostgresRow[]): PostgresRow[] {
    if (this.#held.length === 0) return rows;
    const all = this.#held;
    this.#held = [];
    for (const row of rows) all.push(row);
    return all;
  }

  async #send(transaction: PostgresTransaction, rows: PostgresRow[]): Promise<void> {
    if (rows.length === 0) return;
    this.#carriedAgain = 0;
    // One batch in flight: the previous one's statements must have succeeded before more are sent.
    await this.#settle('writing rows');
    const writer = this.#writer as pg.Client;
    const queries: PostgresQuery[] = [];
    if (!transaction.began) {
      queries.push('BEGIN');
      transaction.began = true;
      this.#openSince = Date.now();
    }
    for (const statement of this.#statements.statements(rows)) {
      queries.push(statement.name === undefined ? { text: statement.text, values: statement.values } : statement);
    }
    transaction.rows += rows.length;
    const inFlight = sendInOrder(writer, queries);
    inFlight.catch(() => {});
    this.#inFlight = inFlight;
    this.#lockWatch?.watch(inFlight);
  }

  async #settle(what: string): Promise<void> {
    const inFlight = this.#inFlight;
    this.#inFlight = undefined;
    try {
      await settleWrites(inFlight, this.#where, what);
    } catch (error) {
      throw this.#lockWatch?.takeFailure() ?? error;
    }
    this.#lockWatch?.takeFailure(); // a statement it cancelled had ended first
  }

  async preCommit(transaction: PostgresTransaction, checkpointId: number): Promise<PostgresCommittable | null> {
    if (this.#held.length > 0) {
      if (this.#prepared.size > 0 && this.#carrying === undefined) return this.#carry(checkpointId);
      if (this.#prepared.size > 0) {
        throw new WeirError(
          'TASK_FAILED',
          `${this.#where}: checkpoint ${checkpointId}'s barrier came while the transaction ${[...this.#prepared].join(', ')} is still prepared (its checkpoint was aborted, or its completion is late); the ${this.#held.length} rows since cannot be written before it commits (a prepared transaction keeps its row locks)`,
          {
            fault: 'external',
            retriable: true,
            hint: 'the job restarts from its latest checkpoint, which commits or rolls back what is prepared; frequent: look for why checkpoints are aborted (timeouts, declines)',
          },
        );
      }
      await this.#send(transaction, this.#takeHeld([]));
    }
    await this.#settle('writing rows');
    if (!transaction.began) return null; // never checkpoint an empty transaction
    const gid = preparedTransactionGid(this.#prefix, this.#subtaskIndex, checkpointId, this.#run);
    try {
      // One round trip: the transaction's id (to tell committed from lost later), then PREPARE.
      const results = (await (this.#writer as pg.Client).query(
        `SELECT pg_current_xact_id()::text AS xid; PREPARE TRANSACTION ${gidLiteral(gid)}`,
      )) as unknown as pg.QueryResult<{ xid: string }>[];
      transaction.began = false;
      this.#openSince = undefined;
      this.#prepared.add(gid);
      const xid = results[0]?.rows[0]?.xid;
      if (xid === undefined) throw new Error('no transaction id returned');
      return { gid, xid };
    } catch (error) {
      if (sqlStateOf(error) === SQLSTATE.notInPrerequisiteState) {
        throw postgresFailure(this.#where, `PREPARE TRANSACTION (is max_prepared_transactions 0? set it above 0 and restart PostgreSQL)`, error);
      }
      throw postgresFailure(this.#where, `PREPARE TRANSACTION ${gid}`, error);
    }
  }

  /**
   * The barrier came while a transaction of this subtask is still prepared, rows held behind it:
   * the checkpoint's transaction begins now and takes its id (no row is written: no lock waited
   * on), and its committable carries the rows into the checkpoint.
   */
  async #carry(checkpointId: number): Promise<PostgresCommittable> {
    const gid = preparedTransactionGid(this.#prefix, this.#subtaskIndex, checkpointId, this.#run);
    let xid: string | undefined;
    try {
      const results = (await (this.#writer as pg.Client).query('BEGIN; SELECT pg_current_xact_id()::text AS xid')) as unknown as pg.QueryResult<{
        xid: string;
      }>[];
      xid = results[1]?.rows[0]?.xid;
      if (xid === undefined) throw new Error('no transaction id returned');
    } catch (error) {
      throw postgresFailure(this.#where, `beginning the transaction of ${gid}`, error);
    }
    const rows = this.#takeHeld([]);
    this.#carrying = { gid, rows };
    this.#prepared.add(gid);
    return { gid, xid, carried: rows };
  }

  /** The carried transaction's commit has come (the one it waited behind is committed): its rows are written and it is prepared. */
  async #prepareCarried(carrying: { gid: string; rows: PostgresRow[] }): Promise<void> {
    this.#carrying = undefined;
    await postgresTestDelay('carried-prepare', `PREPARE TRANSACTION ${carrying.gid} (carried)`);
    const writer = this.#writer as pg.Client;
    try {
      const queries: PostgresQuery[] = this.#statements
        .statements(carrying.rows)
        .map((statement) => (statement.name === undefined ? { text: statement.text, values: statement.values } : statement));
      queries.push(`PREPARE TRANSACTION ${gidLiteral(carrying.gid)}`);
      const sending = sendInOrder(writer, queries);
      this.#lockWatch?.watch(sending);
      await sending;
      this.#lockWatch?.takeFailure(); // a statement it cancelled had ended first
    } catch (error) {
      throw this.#lockWatch?.takeFailure() ?? postgresFailure(this.#where, `writing the carried rows of ${carrying.gid} and preparing it`, error);
    }
  }

  async commit(committable: PostgresCommittable): Promise<void> {
    if (this.#carrying !== undefined && this.#carrying.gid === committable.gid) await this.#prepareCarried(this.#carrying);
    const since = Date.now();
    const scope = { where: this.#where, sessions: sinkSessionNameStart(this.#prefix) };
    while (!(await this.#commitOnce(committable))) await endOpenCarried(this.#committer as pg.Client, committable, since, scope);
    // A gid this run did not prepare is a restored checkpoint's: the recovery commits it.
    if (!this.#prepared.delete(committable.gid)) await postgresTestDelay('recovery-commit', `COMMIT PREPARED ${committable.gid}`);
  }

  /** Commits the committable's own transaction once: true when it is committed (or its carried rows are held to be written again), false while a carried one is still open on its run's session or its prepared transaction is busy. */
  async #commitOnce(committable: PostgresCommittable): Promise<boolean> {
    const committer = this.#committer as pg.Client;
    // A gid of a Weir before run tokens names (prefix, subtask, checkpoint), not the run: once this
    // transaction committed, an owner fenced in Kafka but not stopped yet (a zombie, a checkpoint
    // behind) may prepare its own under the same gid. COMMIT PREPARED commits whatever holds the
    // name: only this one is.
    const holder = await this.#preparedUnder(committable);
    const own = xid32(committable.xid);
    if (holder !== undefined && own !== undefined && holder !== own) {
      processLog().warn(
        `${this.#where}: ${committable.gid} is prepared by transaction ${holder}, not by ${committable.xid} (the one the checkpoint holds: another owner's, fenced): not committed (the next restore rolls it back)`,
      );
      return this.#checkCommitted(committable);
    } else {
      try {
        await committer.query(`COMMIT PREPARED ${gidLiteral(committable.gid)}`);
      } catch (error) {
        // "is busy": another session is committing it or its session is ending (after a PREPARE): look again.
        if (sqlStateOf(error) === SQLSTATE.notInPrerequisiteState) return false;
        if (sqlStateOf(error) !== SQLSTATE.undefinedObject) throw postgresFailure(this.#where, `COMMIT PREPARED ${committable.gid}`, error);
        return this.#checkCommitted(committable);
      }
    }
    return true;
  }
  /** The (32-bit) id of the transaction prepared under the committable's gid, if one is. */
  async #preparedUnder(committable: PostgresCommittable): Promise<string | undefined> {
    try {
      const result = await (this.#committer as pg.Client).query<{ xid: string }>(
        'SELECT transaction::text AS xid FROM pg_prepared_xacts WHERE gid = $1 AND database = current_database()',
        [committable.gid],
      );
      return result.rows[0]?.xid;
    } catch (error) {
      throw postgresFailure(this.#where, `looking up prepared transaction ${committable.gid} (pg_prepared_xacts)`, error);
    }
  }

  /** After the commits up to this checkpoint: the rows held behind them go out, into the transaction being written. */
  async notifyCheckpointComplete(): Promise<void> {
    // The carried transaction is the only one left: what it waited behind committed, its rows go in now.
    const carrying = this.#carrying;
    if (carrying !== undefined && this.#prepared.size === 1) await this.#prepareCarried(carrying);
    if (this.#prepared.size === 0 && this.#held.length > 0 && this.#current !== undefined) await this.#send(this.#current, this.#takeHeld([]));
    if (this.#owner !== undefined && Date.now() - this.#lookedAt >= EARLIER_OWNERS_LOOK_MS) {
      // A zombie's transaction that blocks nothing (appends) would hold its slot of
      // max_prepared_transactions and the xmin horizon until the task's next restore.
      this.#lookedAt = Date.now();
      await rollBackEarlierOwners(this.#committer as pg.Client, this.#scope, this.#owner, this.#restoredGids);
    }
  }

  /**
   * The gid is not prepared (any more): committed before (a repeat), or rolled back (the data is
   * lost; a carried transaction's rows are written again). False for a carried transaction still
   * open (never prepared) on its run's session: its run may yet prepare and commit it, or end and
   * roll it back, so it is neither committed nor lost yet.
   */
  async #checkCommitted(committable: PostgresCommittable): Promise<boolean> {
    const committer = this.#committer as pg.Client;
    let status: string | null;
    try {
      const result = await committer.query<{ status: string | null }>('SELECT pg_xact_status($1::xid8) AS status', [committable.xid]);
      status = result.rows[0]?.status ?? null;
    } catch (error) {
      throw postgresFailure(this.#where, `checking whether transaction ${committable.xid} (${committable.gid}) committed`, error);
    }
    if (status === 'committed') return true;
    if (status === 'in progress' && committable.carried !== undefined) return false;
    if (status === 'aborted' && committable.carried !== undefined) {
      // A carried transaction the crashed run never prepared: its rows are only in the checkpoint.
      // They go into this run's first transaction (no later committable of this subtask can be
      // restored behind it: a second barrier behind it fails the task).
      for (const row of committable.carried) this.#held.push(row);
      this.#carriedAgain += committable.carried.length;
      processLog().info(
        `${this.#where}: transaction ${committable.gid} was never prepared (its run ended first): its ${committable.carried.length} rows, kept in the checkpoint, are written again`,
      );
      return true;
    }
    if (status === 'aborted') {
      throw dataLoss(
        `${this.#where}: prepared transaction ${committable.gid} (transaction ${committable.xid}) was rolled back before its checkpoint's commit: its rows are lost`,
        'something other than this job rolled it back (ROLLBACK PREPARED by hand or by another job with the same gidPrefix): give each job its own gidPrefix; the rows must be written again (restore from an earlier checkpoint or replay)',
      );
    }
    // 'in progress' (someone else is committing it right now) or unknown (too old to tell): not lost as far as can be told.
    processLog().warn(
      `${this.#where}: prepared transaction ${committable.gid} is gone and its transaction ${committable.xid} is ${status ?? 'too old to tell'}: taken as committed`,
    );
    return true;
  }

  async abort(transaction: PostgresTransaction): Promise<void> {
    this.#held = [];
    if (!transaction.began) return;
    transaction.began = false;
    this.#openSince = undefined;
    const inFlight = this.#inFlight;
    this.#inFlight = undefined;
    await inFlight?.catch(() => {});
    await (this.#writer as pg.Client).query('ROLLBACK').catch(() => {}); // a lost connection rolls back by itself
  }

  /** Carried rows of a restored checkpoint's transaction its run never prepared, held to be written into this run's first transaction. */
  restoredRecordsOwed(): number {
    return this.#carriedAgain;
  }

  isEmpty(transaction: PostgresTransaction): boolean {
    return !transaction.began && this.#held.length === 0;
  }

  async abortLingering(context: RecoveryContext<PostgresCommittable>): Promise<number> {
    // Held: the gid and the transaction (a zombie's prepared under a held gid since is not held).
    const held = new Map(context.allRestoredCommittables.map((committable) => [committable.gid, xid32(committable.xid)]));
    for (const gid of held.keys()) this.#restoredGids.add(gid);
    const scope = { ...this.#scope, subtaskIndex: context.subtaskIndex, parallelism: context.parallelism };
    return rollBackLingering(this.#committer as pg.Client, scope, held, this.#owner);
  }

  async close(): Promise<void> {
    // A carried transaction still open is rolled back with its connection: a restore writes its rows again.
    this.#carrying = undefined;
    if (this.#carriedAgain > 0) {
      // The job's end (or a run that ended before writing anything): the rows stay in the checkpoint.
      processLog().warn(
        `${this.#where}: ${this.#carriedAgain} rows of the latest completed checkpoint, carried by a transaction its run never prepared, were not written: the job ended first; a start from that checkpoint writes them`,
      );
      this.#carriedAgain = 0;
    }
    await this.#lockWatch?.close();
    this.#lockWatch = undefined;
    const clients = [this.#writer, this.#committer];
    this.#writer = undefined;
    this.#committer = undefined;
    await Promise.all(clients.map((client) => client?.end().catch(() => {})));
  }
}
