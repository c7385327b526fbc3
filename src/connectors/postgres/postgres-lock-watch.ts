import type pg from 'pg';
import { WeirError } from '../../core/errors/weir-error.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import type { TaskOwner } from '../../core/operator/task-owner.ts';
import { preparedOfSubtask, rollBackEarlierOwners } from './postgres-prepared.ts';

/** How long a batch's statements may wait before the watch looks at what they wait for, and how often it looks again. */
export const LOCK_WATCH_MS = 5000;

/** What the watch needs of its sink subtask. */
export interface LockWatchTarget {
  /** A new connection of its own (the sink's two are busy: one waits, the other commits). */
  connect(): Promise<pg.Client>;
  /** The backend process of the writing connection. */
  writerPid: number;
  prefix: string;
  subtaskIndex: number;
  parallelism: number;
  /** This run's token (its own prepared transactions never block its writes: it holds rows back behind them). */
  run: string;
  /** Cluster mode: the producer this run of the task was fenced in with; undefined in one process. */
  owner: TaskOwner | undefined;
  /** The gids the restored checkpoint holds: never rolled back as an earlier owner's. */
  restoredGids: ReadonlySet<string>;
  where: string;
}

/**
 * Watches the exactly-once PostgreSQL sink's writes for one wait that never ends by itself: its
 * statements waiting on row locks of a transaction prepared under its own prefix and subtask by
 * another run. In cluster mode a task's fenced owner that has not stopped yet (a zombie) may
 * prepare its checkpoint's transaction after the next owner's restore rolled back what lingered;
 * nobody commits it (its Kafka commit fails), and the next owner's upserts of the same keys would
 * wait on its locks for ever, the task standing still. After {@link LOCK_WATCH_MS} the watch asks
 * PostgreSQL what the writer waits for (pg_blocking_pids: a prepared transaction shows as 0) and,
 * when it is such a transaction: in cluster mode, where runs are ordered (task-owner.ts), it rolls
 * back those of the task's earlier owners (the wait ends, the task goes on); any other run's left
 * (this run is the zombie, waiting on its successor's; or a run of unknown order) it cancels the
 * writer's statement: the task fails, naming the gids, and its restart's recovery rolls back what
 * is not a later owner's. A wait on anything else (another application's locks) is waited out, and
 * logged once.
 */
export class PostgresLockWatch {
  readonly #target: LockWatchTarget;
  readonly #timer: NodeJS.Timeout;
  /** The statements in flight, and when they were sent (undefined when none are). */
  #watched: { since: number } | undefined;
  /** The look under way (close waits for it: its cancel names the writer's process). */
  #looking: Promise<void> | undefined;
  /** A wait already logged (once per wait). */
  #logged: number | undefined;
  #failure: WeirError | undefined;

  /** The watch of a sink's writing connection (none for a connection without a backend process: a unit test's fake). */
  static of(writer: pg.Client, target: Omit<LockWatchTarget, 'writerPid'>): PostgresLockWatch | undefined {
    const writerPid = (writer as unknown as { processID?: number | null }).processID;
    return typeof writerPid === 'number' ? new PostgresLockWatch({ ...target, writerPid }) : undefined;
  }

  constructor(target: LockWatchTarget) {
    this.#target = target;
    this.#timer = setInterval(() => this.#tick(), LOCK_WATCH_MS);
    this.#timer.unref();
  }

  /** Statements sent: watched until they settle. */
  watch(inFlight: Promise<unknown>): void {
    const watched = { since: Date.now() };
    this.#watched = watched;
    const settled = () => {
      if (this.#watched === watched) this.#watched = undefined;
    };
    inFlight.then(settled, settled);
  }

  /** The failure the task fails with when the watch cancelled the writer's statement (else undefined); the watch looks again from then on. */
  takeFailure(): WeirError | undefined {
    const failure = this.#failure;
    this.#failure = undefined;
    return failure;
  }

  /** Stops watching (once a look under way is done: its cancel names the writer's process, which must still be the writer's). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#looking;
  }

  #tick(): void {
    const since = this.#watched?.since;
    if (since === undefined || this.#looking !== undefined || this.#failure !== undefined || Date.now() - since < LOCK_WATCH_MS) return;
    this.#looking = this.#look(since)
      .catch((error: unknown) => {
        this.#logOnce(since, `could not look at what its statements wait for: ${(error as Error).message}`);
      })
      .finally(() => {
        this.#looking = undefined;
      });
  }

  #logOnce(since: number, message: string): void {
    if (this.#logged === since) return;
    this.#logged = since;
    processLog().warn(`${this.#target.where}: ${message}`);
  }

  async #look(since: number): Promise<void> {
    const target = this.#target;
    const client = await target.connect();
    try {
      const blocking = await client.query<{ prepared: boolean; others: boolean }>(
        'SELECT 0 = ANY(blocking) AS prepared, cardinality(blocking) > 0 AS others FROM (SELECT pg_blocking_pids($1::int) AS blocking) AS writer',
        [target.writerPid],
      );
      const row = blocking.rows[0];
      if (row === undefined || !row.others) return;
      const scope = { prefix: target.prefix, subtaskIndex: target.subtaskIndex, parallelism: target.parallelism, where: target.where };
      // An earlier owner's rolled back: the wait ends with them, or the next look sees what else it waits on.
      if (row.prepared && target.owner !== undefined && (await rollBackEarlierOwners(client, scope, target.owner, target.restoredGids)).length > 0) return;
      const others = row.prepared ? await preparedOfSubtask(client, scope) : [];
      const stale = others.filter((prepared) => prepared.parts.run !== target.run).map((prepared) => prepared.gid);
      if (stale.length === 0) {
        this.#logOnce(
          since,
          `its statements have waited ${Math.round((Date.now() - since) / 1000)} s on locks of other sessions${row.prepared ? " (a prepared transaction among them, none of this subtask's other runs)" : ''}: the checkpoint waits with them`,
        );
        return;
      }
      const failure = new WeirError(
        'TASK_FAILED',
        `${target.where}: its rows wait on the locks of a prepared transaction, and prepared transaction(s) ${stale.join(', ')} of this sink's subtask that this run did not prepare are there (a fenced owner of the task that has not stopped, a zombie, prepared them after another's restore; whichever run is the zombie, they must not wait on each other): the waiting statement is cancelled`,
        {
          fault: 'external',
          retriable: true,
          hint: 'the task restarts from its latest checkpoint, whose recovery rolls back what crashed or earlier runs left; if a run of this job is still alive elsewhere, stop it (two runs of a job must never share a gidPrefix)',
        },
      );
      // Named before the cancel: the writer's statement fails at once with it (a cancel that fails names nothing).
      this.#failure = failure;
      try {
        await client.query('SELECT pg_cancel_backend($1::int)', [target.writerPid]);
      } catch (error) {
        if (this.#failure === failure) this.#failure = undefined;
        throw error;
      }
    } finally {
      await client.end().catch(() => {});
    }
  }
}
