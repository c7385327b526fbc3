import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage, hasCode, storageIoError } from './storage-errors.ts';
import {
  describeOwner,
  judgeOwner,
  LOCK_FILE_NAME,
  LOCK_HEARTBEAT_MS,
  type LockOptions,
  type LockOwner,
  lockedError,
  lockLostError,
  lockLostReason,
  newLockOwner,
  parseOwner,
  type StorageLock,
} from './storage-lock.ts';

export { LOCK_FILE_NAME, LOCK_VERSION, type LockOwner } from './storage-lock.ts';

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
export class CheckpointStorageLock implements StorageLock {
  readonly #path: string;
  readonly #owner: LockOwner;
  readonly #options: LockOptions;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  /** Why the lock was lost, once it was. */
  #lost: string | undefined;

  readonly tookOverFrom: string | undefined;

  private constructor(path: string, owner: LockOwner, options: LockOptions, tookOverFrom: string | undefined) {
    this.tookOverFrom = tookOverFrom;
    this.#path = path;
    this.#owner = owner;
    this.#options = options;
  }

  /** Takes the lock of the checkpoint folder `root` (which exists), or refuses with CHECKPOINT_STORAGE_LOCKED. */
  static async acquire(root: string, options: LockOptions): Promise<CheckpointStorageLock> {
    const path = join(root, LOCK_FILE_NAME);
    const owner = newLockOwner();
    let tookOverFrom: string | undefined;
    for (let tries = 0; ; tries++) {
      if (await createExclusively(path, owner)) break;
      const current = await readOwner(path);
      if (current === 'gone') continue; // released meanwhile: try again
      if (current === undefined || tries >= 3) throw lockedError(root, current, path);
      const token = `${current.id}@${current.heartbeatAt}`;
      const judged = await judgeOwner(current, token, async () => tokenOf(await readOwner(path)), options, `folder ${root}`);
      if (judged === 'alive') throw lockedError(root, current, path);
      if (judged === 'changed') continue; // a heartbeat (a live owner) or a release: judge again
      if (await takeOver(path, token)) {
        tookOverFrom = `${describeOwner(current)}, ${judged.gone}`;
        options.log(`took over the lock of checkpoint folder ${root}: ${tookOverFrom}`);
      }
    }
    const lock = new CheckpointStorageLock(path, owner, options, tookOverFrom);
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

  async verify(): Promise<void> {
    if (this.#released) throw lockLostError(this.#lost ?? `this process gave the lock of checkpoint folder ${this.#path} up`);
    const current = await readOwner(this.#path);
    if (current !== 'gone' && current !== undefined && current.id === this.#owner.id) return;
    throw lockLostError(this.#lose(current));
  }

  /** The lock is someone else's (or gone): stop the heartbeat, tell the owner once; returns why. */
  #lose(current: LockOwner | 'gone' | undefined): string {
    if (this.#lost !== undefined) return this.#lost;
    const why = lockLostReason(`folder ${this.#path}`, current);
    this.#lost = why;
    this.#released = true;
    clearInterval(this.#timer);
    this.#options.log(why);
    this.#options.onLost?.(why);
    return why;
  }

  async #heartbeat(): Promise<void> {
    if (this.#released) return;
    const current = await readOwner(this.#path);
    if (current === 'gone' || current === undefined || current.id !== this.#owner.id) {
      this.#lose(current);
      return;
    }
    // The heartbeat is the file's modification time: the content is written once, at creation,
    // so a heartbeat can never overwrite the lock of a process that took it over meanwhile (between
    // the read above and this call it would touch the new owner's file, and the next heartbeat
    // notices the loss).
    const now = new Date();
    try {
      await utimes(this.#path, now, now);
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
    const [text, stats] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    const owner = parseOwner(text);
    // Its last heartbeat: the later of the one written at creation and the file's modification time.
    return owner === undefined ? undefined : { ...owner, heartbeatAt: Math.max(owner.heartbeatAt, stats.mtimeMs) };
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return 'gone';
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot read the lock file ${path}`, error);
  }
}

/** What changes with every heartbeat of a lock (its owner and last heartbeat); undefined when there is none. */
function tokenOf(owner: LockOwner | 'gone' | undefined): string | undefined {
  return owner === 'gone' || owner === undefined ? undefined : `${owner.id}@${owner.heartbeatAt}`;
}

/**
 * Moves the stale lock aside (atomic: of two processes taking it over at once, one moves it), and
 * puts it back if what was moved is not the lock judged stale (a fresh owner, or a heartbeat, got in between).
 */
async function takeOver(path: string, staleToken: string): Promise<boolean> {
  const aside = `${path}.${randomBytes(8).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return false;
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot take over the lock file ${path}`, error);
  }
  let moved: string | undefined;
  try {
    moved = tokenOf(await readOwner(aside));
  } catch {
    moved = undefined;
  }
  if (moved !== staleToken) {
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
