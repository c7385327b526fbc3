import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { PreflightFinding } from '../../core/connector/preflight.ts';
import { gidLiteral, isSinkSessionOf, parseGid, sinkSessionNameStart } from './postgres-gid.ts';

/** A prepared transaction under the sink's gid prefix, anywhere in the server (gids are unique server-wide). */
export interface PreparedUnderPrefix {
  gid: string;
  database: string;
  owner: string;
  prepared: string;
}

/** A connection whose application_name says it is a sink subtask's under the prefix (exactly-once-postgres-writer.ts names them). */
export interface SessionUnderPrefix {
  pid: number;
  applicationName: string;
  database: string | null;
}

/** Who uses a gid prefix on the server: plain data, so the findings are testable without a server. */
export interface PrefixUse {
  prepared: PreparedUnderPrefix[];
  sessions: SessionUnderPrefix[];
}

/** How long sessions found under the prefix are given to go away before they count as a live job's (a process just killed: the server ends its sessions as soon as it sees the sockets closed). */
export const SESSION_RECHECK_MS = 1_000;

/**
 * Reads who uses the prefix: its prepared transactions (pg_prepared_xacts, every database) and the
 * sessions named after it (pg_stat_activity shows every session's application_name to any role).
 * Sessions found are looked at again after {@link SESSION_RECHECK_MS}, and only those still there
 * count; not when the job's previous run is known to be gone (its sessions are that run's).
 */
export async function readPrefixUse(client: pg.Client, prefix: string, predecessorGone: string | undefined): Promise<PrefixUse> {
  const prepared = await client.query<{ gid: string; database: string; owner: string; prepared: string }>(
    'SELECT gid, database::text AS database, owner::text AS owner, prepared::text AS prepared FROM pg_prepared_xacts WHERE left(gid, length($1)) = $1 ORDER BY gid',
    [`${prefix}-`],
  );
  const readSessions = async () =>
    (
      await client.query<{ pid: number; application_name: string; database: string | null }>(
        'SELECT pid, application_name, datname::text AS database FROM pg_stat_activity WHERE left(application_name, length($1)) = $1 AND pid <> pg_backend_pid() ORDER BY application_name',
        [sinkSessionNameStart(prefix)],
      )
    ).rows
      .filter((row) => isSinkSessionOf(prefix, row.application_name))
      .map((row) => ({ pid: row.pid, applicationName: row.application_name, database: row.database }));
  let sessions = predecessorGone === undefined ? await readSessions() : [];
  if (sessions.length > 0) {
    await sleep(SESSION_RECHECK_MS);
    const stillThere = new Set((await readSessions()).map((session) => session.pid));
    sessions = sessions.filter((session) => stillThere.has(session.pid));
  }
  return { prepared: prepared.rows.filter((row) => parseGid(prefix, row.gid) !== undefined), sessions };
}

/**
 * The findings about who uses the prefix. Another job is recognized by what this sink could not
 * have left or cannot end: a prepared transaction under the prefix in another database or of
 * another role (this sink's recovery lists and ends only its own database's, as its role, and its
 * own PREPARE TRANSACTION would collide with those gids, which are unique in the whole server), and
 * a live session named after the prefix (a running job: the sink's connections carry the prefix in
 * their application_name). A prepared transaction in this database, of this role, with no live
 * session, cannot be told from a crashed run of this job: it is not refused, the restore commits it
 * (when the restored checkpoint holds it) or rolls it back.
 */
export function prefixInUseFindings(
  where: string,
  prefix: string,
  own: { database: string; role: string },
  use: PrefixUse,
  prefixSetting: string,
): PreflightFinding[] {
  const findings: PreflightFinding[] = [];
  const foreign = use.prepared.filter((entry) => entry.database !== own.database || entry.owner !== own.role);
  if (foreign.length > 0) {
    const shown = foreign.slice(0, 5);
    findings.push({
      level: 'error',
      where,
      message:
        `${where}: its gid prefix "${prefix}" is another job's: ` +
        shown
          .map((entry) => `prepared transaction "${entry.gid}" (database "${entry.database}", role "${entry.owner}", prepared ${entry.prepared})`)
          .join(', ') +
        `${foreign.length > shown.length ? ` and ${foreign.length - shown.length} more` : ''}; this sink writes to database "${own.database}" as role "${own.role}", ` +
        'so its recovery cannot end them, and its own PREPARE TRANSACTION would collide with those gids (they are unique in the whole server)',
      hint:
        `give this sink its own prefix: ${prefixSetting} (two jobs must never share one); ` +
        `if they are this job's own, left by a run against database "${shown[0]?.database}" or as role "${shown[0]?.owner}", end each there as that role: ` +
        `COMMIT PREPARED ${gidLiteral(shown[0]?.gid ?? '')} if its checkpoint completed, else ROLLBACK PREPARED ${gidLiteral(shown[0]?.gid ?? '')}`,
    });
  }
  if (use.sessions.length > 0) {
    const shown = use.sessions.slice(0, 4);
    findings.push({
      level: 'error',
      where,
      message:
        `${where}: another live job writes under its gid prefix "${prefix}": ` +
        shown
          .map((session) => `session "${session.applicationName}" (pid ${session.pid}${session.database === null ? '' : `, database "${session.database}"`})`)
          .join(', ') +
        `${use.sessions.length > shown.length ? ` and ${use.sessions.length - shown.length} more` : ''} connected; ` +
        "starting would roll back that job's prepared transactions (its checkpoints' rows lost: it fails with DATA_LOSS) and collide with its gids",
      hint: `give this sink (or the other job's) its own prefix: ${prefixSetting}; if the other job is a stale copy of this one, stop it first (if it is this very job, running while weir doctor checks it, nothing is wrong)`,
    });
  }
  return findings;
}
