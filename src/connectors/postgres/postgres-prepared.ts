import type pg from 'pg';
import { WeirError } from '../../core/errors/weir-error.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import { isEarlierOwner, type TaskOwner } from '../../core/operator/task-owner.ts';
import { postgresFailure, SQLSTATE, sqlStateOf } from './postgres-errors.ts';
import { type GidParts, gidLiteral, parseGid } from './postgres-gid.ts';
import { postgresTestDelay } from './postgres-test-delays.ts';

/** How often, at most, a cluster task's sink looks for its earlier owners' prepared transactions (at a completed checkpoint). */
export const EARLIER_OWNERS_LOOK_MS = 10_000;

/** A prepared transaction of a sink's prefix: its gid, its parts, and its (32-bit) transaction id. */
export interface PreparedOfPrefix {
  gid: string;
  xid: string;
  parts: GidParts;
}

/** Where a sink subtask's prepared transactions are looked for. */
export interface PreparedScope {
  prefix: string;
  subtaskIndex: number;
  parallelism: number;
  where: string;
}

/**
 * The prepared transactions of this database under the prefix that the subtask is responsible for
 * (old subtask s with s % parallelism === this one); gids of other sinks whose prefix merely starts
 * with this one are not among them (parseGid).
 */
export async function preparedOfSubtask(client: pg.Client, scope: PreparedScope): Promise<PreparedOfPrefix[]> {
  let listed: { gid: string; xid: string }[];
  try {
    const result = await client.query<{ gid: string; xid: string }>(
      'SELECT gid, transaction::text AS xid FROM pg_prepared_xacts WHERE database = current_database() AND left(gid, length($1)) = $1 ORDER BY gid',
      [`${scope.prefix}-`],
    );
    listed = result.rows;
  } catch (error) {
    throw postgresFailure(scope.where, 'listing prepared transactions (pg_prepared_xacts)', error);
  }
  const mine: PreparedOfPrefix[] = [];
  for (const { gid, xid } of listed) {
    const parts = parseGid(scope.prefix, gid);
    if (parts !== undefined && parts.subtask % scope.parallelism === scope.subtaskIndex) mine.push({ gid, xid, parts });
  }
  return mine;
}

/** ROLLBACK PREPARED of a gid; false when it was not prepared any more (ended meanwhile by another recovery). */
export async function rollBackPrepared(client: pg.Client, gid: string, where: string): Promise<boolean> {
  try {
    await client.query(`ROLLBACK PREPARED ${gidLiteral(gid)}`);
    return true;
  } catch (error) {
    if (sqlStateOf(error) === SQLSTATE.undefinedObject) return false;
    throw postgresFailure(where, `ROLLBACK PREPARED ${gid}`, error);
  }
}

/**
 * Cluster mode: rolls back the subtask's prepared transactions of the task's EARLIER owners
 * (task-owner.ts: the same producer id, a lower epoch), that is of runs fenced before this one
 * began. This owner's recovery committed whatever its restored checkpoint record holds, and a
 * fenced owner's later transactions are in no record that can commit (its Kafka commits fail): each
 * is a zombie's, prepared after this owner's restore, which nobody would ever end. Never one `held`
 * by the restored record (a carried transaction its run prepares only after its record committed:
 * this owner's restore commits it or ends its session first, see {@link endOpenCarried}), one of a
 * later owner (were this run the zombie) nor of a producer id of unknown order. Returns the gids
 * rolled back.
 */
export async function rollBackEarlierOwners(client: pg.Client, scope: PreparedScope, owner: TaskOwner, held: ReadonlySet<string>): Promise<string[]> {
  const rolledBack: string[] = [];
  for (const prepared of await preparedOfSubtask(client, scope)) {
    const other = prepared.parts.owner;
    if (other === undefined || !isEarlierOwner(other, owner) || held.has(prepared.gid)) continue;
    if (await rollBackPrepared(client, prepared.gid, scope.where)) rolledBack.push(prepared.gid);
  }
  if (rolledBack.length > 0) {
    processLog().info(
      `${scope.where}: rolled back ${rolledBack.length} prepared transaction(s) of earlier owners of the task (fenced, prepared after this owner's restore; their commits can never come): ${rolledBack.join(', ')}`,
    );
  }
  return rolledBack;
}

/**
 * A restore's recovery: rolls back every prepared transaction of the subtask (see
 * {@link preparedOfSubtask}) that the restored checkpoint does not hold (`held`: gid -> its 32-bit
 * transaction id, undefined when the committable did not say) — a crashed run's, prepared for a
 * checkpoint that never completed. In cluster mode (`owner`) never a LATER owner's: this run may
 * have stood still between its fencing and this recovery while the task moved on, and its
 * successor's transactions are in records that commit. Returns how many it rolled back.
 */
export async function rollBackLingering(
  client: pg.Client,
  scope: PreparedScope,
  held: ReadonlyMap<string, string | undefined>,
  owner: TaskOwner | undefined,
): Promise<number> {
  let aborted = 0;
  let later = 0;
  for (const { gid, xid, parts } of await preparedOfSubtask(client, scope)) {
    if (held.has(gid) && (held.get(gid) === undefined || held.get(gid) === xid)) continue;
    if (owner !== undefined && parts.owner !== undefined && isEarlierOwner(owner, parts.owner)) {
      later++;
      continue;
    }
    if (!(await rollBackPrepared(client, gid, scope.where))) continue; // ended meanwhile by another subtask's recovery
    aborted++;
    await postgresTestDelay('recovery-rollback', `ROLLBACK PREPARED ${gid}`);
  }
  if (aborted > 0) processLog().info(`${scope.where}: rolled back ${aborted} lingering prepared transaction(s) under "${scope.prefix}"`);
  if (later > 0) {
    processLog().warn(
      `${scope.where}: ${later} prepared transaction(s) of a later owner of the task are there: this run was fenced (it stops once it learns so)`,
    );
  }
  return aborted;
}

/** How long a restore waits for a carried transaction still open on another session to end, ending that session, before the task fails. */
export const OPEN_CARRIED_WAIT_MS = 30_000;

/**
 * A restored checkpoint holds a carried transaction (its rows in the committable) that is still
 * open on its run's session, never prepared: that run (a fenced owner not yet stopped, or a run
 * whose connection the server has not closed yet) may still prepare and commit it, or end and roll
 * it back. Taking it as committed would lose its rows if it rolls back; writing them again would
 * duplicate them if it commits. So the session holding it is ended (pg_terminate_backend: its open
 * transaction rolls back; a PREPARE that came first survives it, and the next look commits that),
 * and the caller looks again (also after a COMMIT PREPARED answered "is busy"). Fails the task
 * (retriable) after {@link OPEN_CARRIED_WAIT_MS}.
 */
export async function endOpenCarried(
  client: pg.Client,
  committable: { gid: string; xid: string },
  since: number,
  scope: { where: string; sessions: string },
): Promise<void> {
  const { where } = scope;
  if (Date.now() - since > OPEN_CARRIED_WAIT_MS) {
    throw new WeirError(
      'TASK_FAILED',
      `${where}: transaction ${committable.gid} (${committable.xid}) is still open (a carried one, neither prepared nor ended) or busy (being committed or its session ending) on another session after ${OPEN_CARRIED_WAIT_MS / 1000} s: it can be neither taken as committed nor written again`,
      {
        fault: 'external',
        retriable: true,
        hint: "the task restarts and looks again; if it repeats, end the session holding it (pg_stat_activity.backend_xid) or give this job's role the right to (pg_signal_backend)",
      },
    );
  }
  const ended: number[] = [];
  try {
    // The holder first, then its end by pid: SQL does not order a WHERE's conditions.
    // Only a session of this sink (its name names the prefix): never another application's.
    const holders = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE backend_xid::text = $1 AND pid <> pg_backend_pid() AND left(application_name, length($2)) = $2',
      [(BigInt(committable.xid) & 0xffffffffn).toString(), scope.sessions],
    );
    for (const { pid } of holders.rows) {
      const result = await client.query<{ ended: boolean }>('SELECT pg_terminate_backend($1::int) AS ended', [pid]);
      if (result.rows[0]?.ended === true) ended.push(pid);
    }
  } catch (error) {
    const failure = postgresFailure(where, `ending the session that holds carried transaction ${committable.gid} open (pg_terminate_backend)`, error);
    if (sqlStateOf(error) !== SQLSTATE.insufficientPrivilege) throw failure;
    // Another role's session (rotated credentials): the task restarts and looks again; it may have ended by then.
    throw new WeirError('TASK_FAILED', failure.message, {
      fault: 'external',
      retriable: true,
      hint: "give this job's role the right to end it (GRANT pg_signal_backend), or end that session by hand",
    });
  }
  if (ended.length > 0) {
    processLog().info(
      `${where}: carried transaction ${committable.gid} of the restored checkpoint was still open on session ${ended.join(', ')} (its run not yet stopped), never prepared: that session is ended, so its transaction rolls back and its rows, kept in the checkpoint, are written again (had it prepared it first, it is committed)`,
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
