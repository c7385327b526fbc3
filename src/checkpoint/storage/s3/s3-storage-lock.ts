import { errorMessage } from '../storage-errors.ts';
import {
  describeOwner,
  judgeOwner,
  LOCK_HEARTBEAT_MS,
  type LockOptions,
  type LockOwner,
  lockedError,
  lockLostError,
  lockLostReason,
  newLockOwner,
  parseOwner,
  type StorageLock,
} from '../storage-lock.ts';
import type { S3Objects } from './s3-objects.ts';
import { formatS3Url } from './s3-url.ts';

/**
 * The lock of an S3 checkpoint storage: the object `<prefix>/_lock`, with the same owner record
 * and the same staleness rules as the folder's lock (storage-lock.ts). Every change is a
 * conditional write, so it is atomic on the server: the lock is created with If-None-Match: *
 * (of two processes starting at once, one gets it), a stale lock is taken over with If-Match on
 * the ETag that was judged stale (of two taking over at once, one wins, and a fresh heartbeat in
 * between makes both lose), and the owner's heartbeat replaces the object with If-Match on its own
 * last ETag: when that fails, someone took the lock over, and the owner is told at once.
 */
export class S3StorageLock implements StorageLock {
  readonly #objects: S3Objects;
  readonly #key: string;
  readonly #owner: LockOwner;
  readonly #options: LockOptions;
  #etag: string;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  /** Why the lock was lost, once it was. */
  #lost: string | undefined;

  readonly tookOverFrom: string | undefined;

  private constructor(objects: S3Objects, key: string, owner: LockOwner, etag: string, options: LockOptions, tookOverFrom: string | undefined) {
    this.tookOverFrom = tookOverFrom;
    this.#objects = objects;
    this.#key = key;
    this.#owner = owner;
    this.#etag = etag;
    this.#options = options;
  }

  /** Takes the lock `key` of the storage `root`, or refuses with CHECKPOINT_STORAGE_LOCKED. */
  static async acquire(objects: S3Objects, root: string, key: string, options: LockOptions): Promise<S3StorageLock> {
    const where = formatS3Url({ bucket: objects.bucket, key });
    const owner = newLockOwner();
    let etag: string | undefined;
    let tookOverFrom: string | undefined;
    for (let tries = 0; etag === undefined; tries++) {
      const created = await objects.put(key, JSON.stringify(owner), { ifNoneMatch: '*' });
      if (created !== 'precondition-failed') {
        etag = created.etag;
        break;
      }
      const current = await objects.get(key);
      if (current === undefined) continue; // released meanwhile: try again
      const holder = parseOwner(current.body.toString('utf8'));
      if (holder === undefined || tries >= 3) throw lockedError(root, holder, where);
      const judged = await judgeOwner(holder, current.etag, async () => (await objects.get(key))?.etag, options, `storage ${root}`);
      if (judged === 'alive') throw lockedError(root, holder, where);
      if (judged === 'changed') continue; // a heartbeat (a live owner) or a release: judge again
      // If-Match on the ETag watched: a heartbeat in between makes it fail.
      const taken = await objects.put(key, JSON.stringify(owner), { ifMatch: current.etag });
      if (taken === 'precondition-failed') continue; // a fresh heartbeat or another taker got in between: judge again
      etag = taken.etag;
      tookOverFrom = `${describeOwner(holder)}, ${judged.gone}`;
      options.log(`took over the lock of checkpoint storage ${root}: ${tookOverFrom}`);
    }
    const lock = new S3StorageLock(objects, key, owner, etag, options, tookOverFrom);
    lock.#timer = setInterval(() => void lock.#heartbeat(), options.heartbeatMs ?? LOCK_HEARTBEAT_MS);
    lock.#timer.unref();
    return lock;
  }

  /** Deletes the lock if it is still this process's. On exit the request may not get out: the lock is then stale (taken over at once on this host, after its heartbeat's age elsewhere). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    void (async () => {
      const current = await this.#objects.get(this.#key);
      if (current !== undefined && parseOwner(current.body.toString('utf8'))?.id === this.#owner.id) await this.#objects.delete([this.#key]);
    })().catch(() => {});
  }

  async verify(): Promise<void> {
    if (this.#released) throw lockLostError(this.#lost ?? `this process gave the lock of checkpoint storage ${this.#where()} up`);
    const current = await this.#objects.get(this.#key);
    const holder = current === undefined ? undefined : parseOwner(current.body.toString('utf8'));
    if (holder?.id === this.#owner.id) return;
    throw lockLostError(this.#lose(holder));
  }

  /** The lock is someone else's (or gone): stop the heartbeat, tell the owner once; returns why. */
  #lose(holder: LockOwner | undefined): string {
    if (this.#lost !== undefined) return this.#lost;
    const why = lockLostReason(`storage ${this.#where()}`, holder ?? 'gone');
    this.#lost = why;
    this.#released = true;
    clearInterval(this.#timer);
    this.#options.log(why);
    this.#options.onLost?.(why);
    return why;
  }

  #where(): string {
    return formatS3Url({ bucket: this.#objects.bucket, key: this.#key });
  }

  async #heartbeat(): Promise<void> {
    if (this.#released) return;
    this.#owner.heartbeatAt = Date.now();
    try {
      const written = await this.#objects.put(this.#key, JSON.stringify(this.#owner), { ifMatch: this.#etag });
      if (written !== 'precondition-failed') {
        this.#etag = written.etag;
        return;
      }
      const current = await this.#objects.get(this.#key).catch(() => undefined);
      const holder = current === undefined ? undefined : parseOwner(current.body.toString('utf8'));
      if (holder?.id === this.#owner.id && current !== undefined) {
        this.#etag = current.etag; // our own write whose answer was lost: go on with it
        return;
      }
      this.#lose(holder);
    } catch (error) {
      this.#options.log(
        `could not refresh the lock of checkpoint storage ${formatS3Url({ bucket: this.#objects.bucket, key: this.#key })}: ${errorMessage(error)}`,
      );
    }
  }
}
