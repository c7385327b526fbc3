import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
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
}

/** The lock object in the storage's root. */
export const LOCK_FILE_NAME = '_lock';
/** The lock file's format version. */
export const LOCK_VERSION = 1;
/** How often the owner refreshes its heartbeat. */
export const LOCK_HEARTBEAT_MS = 10_000;
/** A lock whose heartbeat is older than this is stale: its owner is gone (or hung, or on a host that lost the folder). */
export const LOCK_STALE_AFTER_MS = 60_000;

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

/** Why the lock is stale, in words; undefined while its owner may be alive. */
export function staleness(owner: LockOwner | undefined, staleAfterMs: number): string | undefined {
  if (owner === undefined) return undefined; // not a lock we can judge: refuse, naming the file
  if (owner.host === hostname() && owner.pid !== process.pid && !isAlive(owner.pid)) return 'which is no longer running';
  const silentMs = Date.now() - owner.heartbeatAt;
  if (silentMs > staleAfterMs) return `whose heartbeat stopped ${Math.round(silentMs / 1000)} s ago`;
  return undefined;
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
      hint: `stop the other job (process ${owner.pid} ${where}, running since ${new Date(owner.startedAt).toISOString()}), or give this one another ${STORAGE_SETTING} (--checkpoint-storage); a lock whose owner died is taken over, on another host once its heartbeat is ${LOCK_STALE_AFTER_MS / 1000} s old`,
      fault: 'user',
    },
  );
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
