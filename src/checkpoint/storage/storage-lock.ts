import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { WeirError } from '../../core/errors/weir-error.ts';
import { hasCode, STORAGE_SETTING } from './storage-errors.ts';

/**
 * What every checkpoint storage's lock shares (one process at a time per storage): the owner
 * record the lock object holds (versioned JSON), when a lock is stale, and the refusal. The file
 * system's lock is in checkpoint-storage-lock.ts, the object store's in s3/s3-storage-lock.ts.
 */

/** A storage's lock, held by this process until released. */
export interface StorageLock {
  /** Gives the lock up if it is still this process's; may be called on exit (then it does what it can at once). */
  release(): void;
  /**
   * Checks, by reading the lock in the storage now, that it is still this process's: the fence
   * every write that makes or unmakes a checkpoint passes right before it (and a `_metadata` right
   * after it too). When another process has taken it over, the owner hears of it (`onLost`, once)
   * and this rejects with CHECKPOINT_STORAGE_LOCK_LOST; after {@link release} it rejects too.
   */
  verify(): Promise<void>;
  /**
   * Set when this process took the lock over from an owner judged gone (a process on this host that
   * no longer runs, or one whose heartbeat stood still): who it was. That run ended without its
   * job's end, so the transactions it left open are lingering, not a live job's.
   */
  readonly tookOverFrom: string | undefined;
}

/** The lock object in the storage's root. */
export const LOCK_FILE_NAME = '_lock';
/** The lock file's format version. */
export const LOCK_VERSION = 1;
/** How often the owner refreshes its heartbeat (WEIR_LOCK_HEARTBEAT_MS shortens it, for tests). */
export const LOCK_HEARTBEAT_MS = millisecondsFromEnv('WEIR_LOCK_HEARTBEAT_MS', 10_000);
/**
 * A lock whose heartbeat is older than this is stale: its owner is gone (or hung, or on a host that
 * lost the folder). WEIR_LOCK_STALE_AFTER_MS changes it (tests shorten it); keep it well above the heartbeat.
 */
export const LOCK_STALE_AFTER_MS = millisecondsFromEnv('WEIR_LOCK_STALE_AFTER_MS', 60_000);

function millisecondsFromEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const ms = Number(value);
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new WeirError('INVALID_CHECKPOINT_STORAGE', `${name}=${value} is not a positive number of milliseconds`, { fault: 'user' });
  return ms;
}

/** What the lock file holds (JSON). */
export interface LockOwner {
  version: number;
  pid: number;
  host: string;
  /** When the owner took the lock (ms since the epoch, its clock). */
  startedAt: number;
  /** When the owner last refreshed the lock (ms since the epoch, its clock). */
  heartbeatAt: number;
  /** Tells this owner's lock from a later one's. */
  id: string;
}

export interface LockOptions {
  log: (line: string) => void;
  /** The owner lost the lock (another process took it over as stale): the job must stop writing. */
  onLost?: (why: string) => void;
  staleAfterMs?: number;
  heartbeatMs?: number;
}

/** A new owner record for this process. */
export function newLockOwner(): LockOwner {
  const now = Date.now();
  return { version: LOCK_VERSION, pid: process.pid, host: hostname(), startedAt: now, heartbeatAt: now, id: randomBytes(8).toString('hex') };
}

export function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string' || typeof value.heartbeatAt !== 'number' || typeof value.id !== 'string')
      return undefined;
    return value as LockOwner;
  } catch {
    return undefined;
  }
}

/**
 * How a lock's owner is judged by a process that wants the lock: `gone` (with the words why) when
 * the lock may be taken over, `alive` when it must be refused, `changed` when it changed while
 * being watched (judge it again). An owner on this host whose pid no longer runs is gone at once.
 * Otherwise the clocks of two hosts may disagree, so the owner's own heartbeat time, compared with
 * this clock, only tells a fresh lock (refused at once, as a live owner's); a lock that looks stale
 * by it is watched (`observe` returns a token that changes with every heartbeat, undefined when the
 * lock is gone) on this process's own monotonic clock, and is gone only when it did not change for
 * `staleAfterMs`: an owner whose clock runs behind is never taken for dead.
 */
export type OwnerJudgement = { gone: string } | 'alive' | 'changed';

export async function judgeOwner(
  owner: LockOwner,
  token: string,
  observe: () => Promise<string | undefined>,
  options: LockOptions,
  where: string,
): Promise<OwnerJudgement> {
  if (owner.host === hostname() && owner.pid !== process.pid && !isAlive(owner.pid)) return { gone: 'which is no longer running' };
  const staleAfterMs = options.staleAfterMs ?? LOCK_STALE_AFTER_MS;
  const silentMs = Date.now() - owner.heartbeatAt;
  if (silentMs <= staleAfterMs) return 'alive';
  options.log(
    `the lock of checkpoint ${where} looks stale (${describeOwner(owner)}, heartbeat ${Math.round(silentMs / 1000)} s old by its clock): watching it for ${formatSeconds(staleAfterMs)} before taking it over`,
  );
  const pollMs = Math.max(10, Math.min(options.heartbeatMs ?? LOCK_HEARTBEAT_MS, staleAfterMs / 10));
  const start = performance.now();
  for (;;) {
    const left = staleAfterMs - (performance.now() - start);
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
    if ((await observe()) !== token) return 'changed';
  }
  return {
    gone: `whose heartbeat stopped ${Math.round(silentMs / 1000)} s ago by its clock, and did not change in the ${formatSeconds(staleAfterMs)} watched`,
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return hasCode(error, 'EPERM'); // alive, another user's
  }
}

export function describeOwner(owner: LockOwner): string {
  return `process ${owner.pid} on host ${owner.host} (since ${new Date(owner.startedAt).toISOString()})`;
}

export function lockedError(root: string, owner: LockOwner | undefined, lockPath = `${root}/${LOCK_FILE_NAME}`): WeirError {
  if (owner === undefined) {
    return new WeirError(
      'CHECKPOINT_STORAGE_LOCKED',
      `the checkpoint ${kindOf(root)} ${root} holds a lock file (${LOCK_FILE_NAME}) that is not one this Weir reads`,
      {
        hint: `if no other job uses the folder, delete ${lockPath}; otherwise give this job another ${STORAGE_SETTING} (--checkpoint-storage)`,
        fault: 'user',
      },
    );
  }
  const where = owner.host === hostname() ? 'on this host' : `on host ${owner.host}`;
  return new WeirError(
    'CHECKPOINT_STORAGE_LOCKED',
    `the checkpoint ${kindOf(root)} ${root} is in use by process ${owner.pid} on host ${owner.host}: one job per ${kindOf(root)}`,
    {
      hint: `stop the other job (process ${owner.pid} ${where}, running since ${new Date(owner.startedAt).toISOString()}), or give this one another ${STORAGE_SETTING} (--checkpoint-storage); a lock whose owner died is taken over, on another host once its heartbeat has not moved for ${LOCK_STALE_AFTER_MS / 1000} s`,
      fault: 'user',
    },
  );
}

/** Why a lock is no longer this process's, in words: `holder` is who holds it now ('gone': deleted; undefined: unreadable). */
export function lockLostReason(where: string, holder: LockOwner | 'gone' | undefined): string {
  const now = holder === 'gone' ? 'it was deleted' : holder === undefined ? 'it no longer reads as a Weir lock' : `now held by ${describeOwner(holder)}`;
  return `the lock of checkpoint ${where} is no longer this process's (${now})`;
}

/** The refusal of a write by a process whose lock is no longer its own (`why` says what became of it). */
export function lockLostError(why: string): WeirError {
  return new WeirError('CHECKPOINT_STORAGE_LOCK_LOST', `refused to write to the checkpoint storage: ${why}`, {
    hint: "another process took the storage over (this one was stopped or paused, or could not refresh its lock, for longer than the lock's staleness); it owns the job now: this run ends and leaves its transactions alone",
    fault: 'external',
  });
}

/**
 * A write that makes a checkpoint exist (a `_metadata`), fenced by the storage's lock: the lock is
 * checked right before it, and again right after it, when `undo` takes the write back if the lock
 * was lost meanwhile (a process paused between the check and the write, past the lock's
 * staleness), so a process that lost its lock never leaves a restorable checkpoint behind.
 */
export async function fencedWrite(lock: StorageLock | undefined, write: () => Promise<void>, undo: () => Promise<void>): Promise<void> {
  await lock?.verify();
  await write();
  if (lock === undefined) return;
  try {
    await lock.verify();
  } catch (error) {
    await undo().catch(() => {}); // the error below says the lock is lost; a failed undo leaves what only a restore would still refuse
    throw error;
  }
}

/** For a process that exits without its job ending (a second signal): the lock goes with it. */
export function releaseOnExit(lock: StorageLock): () => void {
  const onExit = () => lock.release();
  process.once('exit', onExit);
  return () => process.off('exit', onExit);
}

/** What a storage root is called in messages: a folder, or (an object store's) storage. */
function kindOf(root: string): string {
  return root.startsWith('s3://') ? 'storage' : 'folder';
}
