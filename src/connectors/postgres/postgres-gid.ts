import { createHash, randomBytes } from 'node:crypto';
import { ownerOfToken, type TaskOwner } from '../../core/operator/task-owner.ts';

/**
 * The global ids (gids) of the PostgreSQL sink's prepared transactions:
 * `<prefix>-<subtask>-<checkpoint id>-o<run>`, built here and parsed here, one way. The prefix is
 * the sink's `gidPrefix`, by default `weir-<job name>-<sink uid>`; the run names the subtask's run
 * (its sink opened once: a start, a restart, a cluster task's owner), so a name is never used
 * twice: a recovery that rolls back what it listed as lingering, however late, can only roll back
 * that transaction, never one that another run (a task's next owner in cluster mode) prepared
 * since for the same checkpoint. In one process the run is a random token; in cluster mode it is
 * the producer the task's run was fenced in with, `<producer id>_<epoch>` in base 36, unique per
 * run and ordered (task-owner.ts): an owner can tell an earlier owner's transactions (a zombie's,
 * prepared after this owner's restore) from its successor's. Gids of a Weir before the run token,
 * `<prefix>-<subtask>-<checkpoint id>`, are read as well (a checkpoint of it holds them).
 *
 * A gid names its prefix exactly: it ends in `-<digits>-<digits>` and maybe `-o<token>`, so what
 * is left before those parts is the prefix; two sinks conflict only when their prefixes are equal.
 * Gids are unique in the whole PostgreSQL server (not per database) and at most
 * {@link MAX_GID_LENGTH} bytes long.
 */

/** PostgreSQL's longest gid: GIDSIZE (200 bytes) less its terminating zero byte. */
export const MAX_GID_LENGTH = 199;

/**
 * The longest prefix: room is left for `-<subtask>` (a subtask is below maxParallelism's bound,
 * 32768: 6 characters), `-<checkpoint id>` at its largest (17) and `-o<run>` (at most 19: a
 * producer id of 13 base-36 digits, `_`, an epoch of 3).
 */
export const MAX_GID_PREFIX_LENGTH = 150;

/** Characters of a run's token (base 36): 36^8 runs, about 2.8e12. */
const RUN_TOKEN_LENGTH = 8;

/** How much of the job name and of the sink uid a default prefix shows (a hash tells longer names apart). */
const NAME_PART_LENGTH = 60;

/** The characters of a prefix: gids are written into SQL as literals, so nothing that needs quoting. */
export const GID_PREFIX_PATTERN = /^[A-Za-z0-9._-]+$/;

/** Where a gid of a sink belongs: the subtask that prepared it, the checkpoint whose barrier did, and the run (undefined in a gid of a Weir before run tokens). */
export interface GidParts {
  subtask: number;
  checkpointId: number;
  run: string | undefined;
  /** The task's owner the run was (cluster mode), undefined for a run of one process. */
  owner: TaskOwner | undefined;
}

/** A new run's token: {@link RUN_TOKEN_LENGTH} random base-36 characters. */
export function newRunToken(): string {
  return (randomBytes(6).readUIntBE(0, 6) % 36 ** RUN_TOKEN_LENGTH).toString(36).padStart(RUN_TOKEN_LENGTH, '0');
}

/** The gid of a subtask's transaction of one checkpoint in one run: `<prefix>-<subtask>-<checkpoint id>-o<run>`. */
export function preparedTransactionGid(prefix: string, subtask: number, checkpointId: number, run: string): string {
  return `${prefix}-${subtask}-${checkpointId}-o${run}`;
}

/**
 * The subtask, checkpoint and run of a gid of this prefix, or undefined when the gid does not
 * follow `<prefix>-<subtask>-<checkpoint id>[-o<run>]` exactly: a gid of another sink whose prefix
 * merely starts with this one (`<prefix>-x-0-3`, `<prefix>-1-0-3`) is not one of ours.
 */
export function parseGid(prefix: string, gid: string): GidParts | undefined {
  if (!gid.startsWith(`${prefix}-`)) return undefined;
  const match = /^(\d+)-(\d+)(?:-o([0-9a-z_]+))?$/.exec(gid.slice(prefix.length + 1));
  if (match === null) return undefined;
  const subtask = Number(match[1]);
  const checkpointId = Number(match[2]);
  if (!Number.isSafeInteger(subtask) || !Number.isSafeInteger(checkpointId)) return undefined;
  return { subtask, checkpointId, run: match[3], owner: ownerOfToken(match[3]) };
}

/**
 * The default gid prefix, one per (job name, sink uid) and never the same for two of them:
 * `weir-<job name>-<sink uid>` when the job name has no `-`, both are made of `A-Z a-z 0-9 . _ -`
 * only and neither is longer than 60 characters (then the first `-` after `weir-` ends the job
 * name, so the prefix says which pair it is); otherwise `weir-<job>-<uid>-h<12 hex>`, the names
 * reduced to those characters and to 60 of them for readability, followed by a hash of the two
 * original names (so jobs `a b` and `a-b`, or job `a-b` with uid `x` and job `a` with uid `b-x`,
 * get different prefixes).
 */
export function defaultGidPrefix(jobName: string, sinkUid: string): string {
  const job = readable(jobName);
  const uid = readable(sinkUid);
  if (job === jobName && uid === sinkUid && !jobName.includes('-')) return `weir-${job}-${uid}`;
  const hash = createHash('sha256').update(jobName).update('\0').update(sinkUid).digest('hex').slice(0, 12);
  return `weir-${job}-${uid}-h${hash}`;
}

function readable(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, NAME_PART_LENGTH);
}

/** A gid as an SQL string literal: PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED take no parameters. */
export function gidLiteral(gid: string): string {
  // The prefix pattern leaves nothing to quote; doubled quotes keep any text a literal regardless.
  return `'${gid.replaceAll("'", "''")}'`;
}

/** Prefixes up to this long are shown whole in a session's name; longer ones are cut and hashed (application_name holds 63 bytes). */
const SESSION_PREFIX_LENGTH = 45;

/**
 * The tag of a prefix in the sink's session names: the prefix itself up to 45 characters, else its
 * first 36 and `~` and a hash of the whole (a `~` is never in a prefix, so a cut one never equals a
 * short one).
 */
function sessionTag(prefix: string): string {
  if (prefix.length <= SESSION_PREFIX_LENGTH) return prefix;
  return `${prefix.slice(0, 36)}~${createHash('sha256').update(prefix).digest('hex').slice(0, 8)}`;
}

/**
 * The `application_name` of a subtask's connection: `weir <prefix>-<subtask>` for the writing one,
 * `weir <prefix>-<subtask> commit` for the committing one (the prefix as {@link sessionTag} shows it).
 * A live job's sessions name its prefix in pg_stat_activity, so the preflight of another job with
 * the same prefix sees it is in use.
 */
export function sinkSessionName(prefix: string, subtask: number, role: 'write' | 'commit'): string {
  return `weir ${sessionTag(prefix)}-${subtask}${role === 'commit' ? ' commit' : ''}`;
}

/** What every session name of this prefix starts with (a LIKE-free match: `left(application_name, n) = start`). */
export function sinkSessionNameStart(prefix: string): string {
  return `weir ${sessionTag(prefix)}-`;
}

/** Whether an application_name is one of this prefix's sessions (not of a prefix that merely starts with it). */
export function isSinkSessionOf(prefix: string, applicationName: string): boolean {
  const start = sinkSessionNameStart(prefix);
  return applicationName.startsWith(start) && /^\d+( commit)?$/.test(applicationName.slice(start.length));
}
