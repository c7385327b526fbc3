import { rm } from 'node:fs/promises';
import { stateDirError } from './lmdb-working-folder.ts';

/** What a scratch environment's user takes of its lmdb database (lmdb-js's root `Database`). */
export interface LmdbScratchDatabase {
  putSync(key: Uint8Array, value: Uint8Array): void;
  getRange(options: { start: Uint8Array; end: Uint8Array; snapshot: boolean }): Iterable<{ key: Buffer }>;
  transactionSync<T>(action: () => T): T;
  close(): Promise<void>;
}

/** A scratch lmdb environment beside a store's (LmdbStore.openScratch): its database, a write transaction on it, and its end (closed, folder deleted). */
export interface LmdbScratch {
  db: LmdbScratchDatabase;
  transaction(action: () => void): void;
  close(): Promise<void>;
}

/**
 * An lmdb environment of its own in folder `path` (binary keys and values, never synced: scratch
 * data such as the incremental tracker's spilled keys). It is never in a copy of the state (a
 * base), and it goes whole, closed and its folder deleted, never dropped: lmdb-js 3.5's lmdb
 * aborted the process (`Assertion 'key.mv_size > 0' failed in mdb_page_alloc()`, as in lmdb-js
 * issue 317) dropping spilled keys' databases from a base's reopened file. `closed` is told when
 * it is closed.
 */
export function openLmdbScratch(path: string, lmdb: { open(options: object): unknown }, closed: () => void): LmdbScratch {
  let root: LmdbScratchDatabase;
  try {
    root = lmdb.open({ path, noSync: true, noMetaSync: true, cache: false, keyEncoding: 'binary', encoding: 'binary' }) as LmdbScratchDatabase;
  } catch (error) {
    throw stateDirError(path, error);
  }
  let closing: Promise<void> | undefined;
  return {
    db: root,
    transaction: (action) => root.transactionSync(action),
    close: () => {
      // The folder goes off the task thread (a spill of millions of keys is a large file to unlink).
      closing ??= root.close().finally(async () => {
        await rm(path, { recursive: true, force: true }).catch(() => {});
        closed();
      });
      return closing;
    },
  };
}
