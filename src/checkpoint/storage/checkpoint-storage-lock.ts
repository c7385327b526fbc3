import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { WeirError } from '../../core/errors/weir-error.ts';
import { errorMessage, hasCode, STORAGE_SETTING, storageIoError } from './storage-errors.ts';

/** The lock file in the checkpoint folder's root. */
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

/**
 * One process at a time per checkpoint folder (two jobs writing one folder overwrite each other's
 * checkpoints and fence each other's transactions). The lock is the file `_lock` in the folder's
 * root, created atomically: its content is written to a temporary file first, then hard-linked to
 * `_lock`, which fails when `_lock` exists (atomic on local file systems and on NFS, unlike
 * O_EXCL on old NFS), so nobody ever reads a half-written lock. Its owner refreshes the heartbeat
 * in it every {@link LOCK_HEARTBEAT_MS} and deletes it when the job ends.
 *
 * A second process is refused while the owner lives: on this host, while its pid is alive and its
 * heartbeat fresh; on another host (a shared folder), while its heartbeat is fresh. A lock of a dead
 * pid on this host, or one whose heartbeat is older than {@link LOCK_STALE_AFTER_MS} (a crashed or
 * SIGKILLed process, a reused pid after a reboot, a host that went away), is taken over and logged.
 */
export class CheckpointStorageLock {
  readonly #path: string;
  readonly #owner: LockOwner;
  readonly #options: LockOptions;
  #timer: NodeJS.Timeout | undefined;
  #released = false;

  private constructor(path: string, owner: LockOwner, options: LockOptions) {
    this.#path = path;
    this.#owner = owner;
    this.#options = options;
  }

  /** Takes the lock of the checkpoint folder `root` (which exists), or refuses with CHECKPOINT_STORAGE_LOCKED. */
  static async acquire(root: string, options: LockOptions): Promise<CheckpointStorageLock> {
    const path = join(root, LOCK_FILE_NAME);
    const now = Date.now();
    const owner: LockOwner = {
      version: LOCK_VERSION,
      pid: process.pid,
      host: hostname(),
      startedAt: now,
      heartbeatAt: now,
      id: randomBytes(8).toString('hex'),
    };
    for (let tries = 0; ; tries++) {
      if (await createExclusively(path, owner)) break;
      const current = await readOwner(path);
      if (current === 'gone') continue; // released meanwhile: try again
      const stale = staleness(current, options.staleAfterMs ?? LOCK_STALE_AFTER_MS);
      if (current === undefined || stale === undefined || tries >= 3) throw lockedError(root, current);
      if (await takeOver(path, current)) {
        options.log(`took over the lock of checkpoint folder ${root}: ${describeOwner(current)}, ${stale}`);
      }
    }
    const lock = new CheckpointStorageLock(path, owner, options);
    lock.#timer = setInterval(() => void lock.#heartbeat(), options.heartbeatMs ?? LOCK_HEARTBEAT_MS);
    lock.#timer.unref();
    return lock;
  }

  /** Deletes the lock file if it is still this process's (synchronously, so it can run on exit). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    try {
      const current = parseOwner(readFileSync(this.#path, 'utf8'));
      if (current?.id === this.#owner.id) unlinkSync(this.#path);
    } catch {
      // gone already, or unreadable: nothing of ours to delete
    }
  }

  async #heartbeat(): Promise<void> {
    if (this.#released) return;
    const current = await readOwner(this.#path);
    if (current === 'gone' || current === undefined || current.id !== this.#owner.id) {
      this.#released = true;
      clearInterval(this.#timer);
      const why = `the lock of checkpoint folder ${this.#path} is no longer this process's (${current === 'gone' || current === undefined ? 'it was deleted' : `now held by ${describeOwner(current)}`})`;
      this.#options.log(why);
      this.#options.onLost?.(why);
      return;
    }
    this.#owner.heartbeatAt = Date.now();
    const temporary = `${this.#path}.${this.#owner.id}.heartbeat`;
    try {
      await writeFile(temporary, JSON.stringify(this.#owner));
      await rename(temporary, this.#path); // atomic replace: readers see the old or the new heartbeat
    } catch (error) {
      this.#options.log(`could not refresh the lock of checkpoint folder ${this.#path}: ${errorMessage(error)}`);
    }
  }
}

/** Writes `owner` to a temporary file and links it to `path`: false when `path` exists. */
async function createExclusively(path: string, owner: LockOwner): Promise<boolean> {
  const temporary = `${path}.${owner.id}.new`;
  try {
    await writeFile(temporary, JSON.stringify(owner), { flag: 'wx' });
    await link(temporary, path);
    return true;
  } catch (error) {
    if (hasCode(error, 'EEXIST')) return false;
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot create the lock file ${path}`, error);
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

/** The lock's owner; 'gone' when there is no lock file; undefined when it does not read (not Weir's, or a newer format). */
async function readOwner(path: string): Promise<LockOwner | 'gone' | undefined> {
  try {
    return parseOwner(await readFile(path, 'utf8'));
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return 'gone';
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot read the lock file ${path}`, error);
  }
}

function parseOwner(text: string): LockOwner | undefined {
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
function staleness(owner: LockOwner | undefined, staleAfterMs: number): string | undefined {
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

/**
 * Moves the stale lock aside (atomic: of two processes taking it over at once, one moves it), and
 * puts it back if what was moved is not the lock judged stale (a fresh owner got in between).
 */
async function takeOver(path: string, stale: LockOwner): Promise<boolean> {
  const aside = `${path}.${randomBytes(8).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return false;
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot take over the lock file ${path}`, error);
  }
  let moved: LockOwner | undefined;
  try {
    moved = parseOwner(await readFile(aside, 'utf8'));
  } catch {
    moved = undefined;
  }
  if (moved?.id !== stale.id) {
    await link(aside, path).catch(() => {}); // someone else's fresh lock: put it back (unless a newer one is there)
    unlinkQuietly(aside);
    return false;
  }
  unlinkQuietly(aside);
  return true;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function describeOwner(owner: LockOwner): string {
  return `process ${owner.pid} on host ${owner.host} (since ${new Date(owner.startedAt).toISOString()})`;
}

function lockedError(root: string, owner: LockOwner | undefined): WeirError {
  if (owner === undefined) {
    return new WeirError('CHECKPOINT_STORAGE_LOCKED', `the checkpoint folder ${root} holds a lock file (${LOCK_FILE_NAME}) that is not one this Weir reads`, {
      hint: `if no other job uses the folder, delete ${join(root, LOCK_FILE_NAME)}; otherwise give this job another ${STORAGE_SETTING} (--checkpoint-storage)`,
      fault: 'user',
    });
  }
  const where = owner.host === hostname() ? 'on this host' : `on host ${owner.host}`;
  return new WeirError(
    'CHECKPOINT_STORAGE_LOCKED',
    `the checkpoint folder ${root} is in use by process ${owner.pid} on host ${owner.host}: one job per folder`,
    {
      hint: `stop the other job (process ${owner.pid} ${where}, running since ${new Date(owner.startedAt).toISOString()}), or give this one another ${STORAGE_SETTING} (--checkpoint-storage); a lock whose owner died is taken over, on another host once its heartbeat is ${LOCK_STALE_AFTER_MS / 1000} s old`,
      fault: 'user',
    },
  );
}

/** For a process that exits without its job ending (a second signal): the lock goes with it. */
export function releaseOnExit(lock: CheckpointStorageLock): () => void {
  const onExit = () => lock.release();
  process.once('exit', onExit);
  return () => process.off('exit', onExit);
}
