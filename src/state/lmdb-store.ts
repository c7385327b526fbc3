import { accessSync, constants, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { WeirError } from '../core/errors/weir-error.ts';
import type { KeyWriter } from './lmdb-key-codec.ts';

/** What the disk backend uses of an lmdb database (lmdb-js's `Database`, loaded lazily). */
export interface LmdbDatabase {
  get(key: Uint8Array, options?: { transaction?: LmdbTransaction }): unknown;
  putSync(key: Uint8Array, value: unknown): void;
  removeSync(key: Uint8Array): boolean;
  getRange(options: {
    start: Uint8Array;
    end?: Uint8Array;
    limit?: number;
    exclusiveStart?: boolean;
    transaction?: LmdbTransaction;
    snapshot?: boolean;
    values?: boolean;
  }): Iterable<{ key: Buffer; value: unknown }>;
  transactionSync<T>(action: () => T): T;
  useReadTransaction(): LmdbTransaction;
  openDB(name: string, options: object): LmdbDatabase;
  close(): Promise<void>;
}

export interface LmdbTransaction {
  done(): void;
}

/** Memory settings of the disk backend (the defaults fit a 2-core, 4 GB machine). */
export interface LmdbStoreSettings {
  /** The initial memory map (address space, not memory); lmdb-js grows it as the file grows. Default 64 MiB. */
  mapSizeBytes?: number;
  /** Writes buffered on the JavaScript side before they go to lmdb in one transaction. Default 8192. */
  writeBufferEntries?: number;
  /**
   * lmdb writes pages in place in its memory map (MDB_WRITEMAP) instead of copying them to the
   * file at each commit: 4x cheaper random writes (bench/state-micro.ts), and with noSync the OS
   * writes dirty pages back when it likes. Default true.
   */
  useWritemap?: boolean;
}

const DEFAULT_MAP_SIZE = 64 * 1024 * 1024;
const DEFAULT_WRITE_BUFFER_ENTRIES = 8192;

/** A deleted key in a write buffer. */
export const TOMBSTONE: unique symbol = Symbol('deleted');

/** The first key of every range (lmdb-js's ranges start at byte 5 unless told). */
export const FIRST_KEY = Buffer.alloc(1);

/** Loads lmdb on first use: a job on the heap backend never loads the native module. */
let lmdbModule: { open(options: object): LmdbDatabase } | undefined;
function loadLmdb(): { open(options: object): LmdbDatabase } {
  lmdbModule ??= createRequire(import.meta.url)('lmdb') as { open(options: object): LmdbDatabase };
  return lmdbModule;
}

/**
 * One lmdb database and the writes not yet in it: a write buffer keyed by the key's bytes (as a
 * latin1 string), holding the value as JavaScript (or {@link TOMBSTONE}), so reads see their
 * own writes at once and writes reach lmdb in batches (one write transaction per
 * `writeBufferEntries`, or before anything reads lmdb directly: a range, a snapshot).
 */
export class LmdbTable {
  readonly db: LmdbDatabase;
  readonly pending = new Map<string, unknown>();
  readonly #store: LmdbStore;

  constructor(db: LmdbDatabase, store: LmdbStore) {
    this.db = db;
    this.#store = store;
  }

  /** The value under the key `key` holds (undefined when none). */
  get(key: KeyWriter): unknown {
    if (this.pending.size > 0) {
      const value = this.pending.get(key.text());
      if (value !== undefined) return value === TOMBSTONE ? undefined : value;
    }
    return this.db.get(key.view());
  }

  put(key: KeyWriter, value: unknown): void {
    this.pending.set(key.text(), value);
    this.#store.written();
  }

  remove(key: KeyWriter): void {
    this.pending.set(key.text(), TOMBSTONE);
    this.#store.written();
  }

  /** Entries of `[start, end)` as lmdb holds them (flush first for the live view). */
  range(start: Uint8Array, end: Uint8Array, limit?: number, transaction?: LmdbTransaction): Iterable<{ key: Buffer; value: unknown }> {
    return this.db.getRange({ start, end, snapshot: false, ...(limit === undefined ? {} : { limit }), ...(transaction === undefined ? {} : { transaction }) });
  }
}

/**
 * The lmdb environment of one keyed backend: a local working folder (cleared when opened: the
 * state comes back from the checkpoint, never from this folder), the state database and one timer
 * index per time domain. Durability comes from checkpoints, so lmdb never syncs to disk (noSync,
 * noMetaSync) and lmdb-js keeps no object cache (`cache: false`): memory is the write buffer and
 * the OS page cache over the memory map (written in place: useWritemap).
 */
export class LmdbStore {
  readonly dir: string;
  readonly state: LmdbTable;
  readonly processingTimers: LmdbTable;
  readonly eventTimers: LmdbTable;
  readonly #root: LmdbDatabase;
  readonly #tables: LmdbTable[];
  readonly #writeBufferEntries: number;
  #buffered = 0;
  /** Names what an encoding failure was about (the state of a key). */
  describeKey: (key: Buffer) => string = () => 'a state';
  #closed = false;

  /**
   * `folder`: the backend's working folder. lmdb lives in a subfolder of this instance
   * (`<pid>-<thread>-<n>`), so a new instance never opens files another one has open; what
   * earlier processes and attempts left is deleted first.
   */
  constructor(folder: string, settings: LmdbStoreSettings = {}) {
    const dir = join(folder, `${process.pid}-${threadId}-${nextInstance++}`);
    this.dir = dir;
    this.#writeBufferEntries = settings.writeBufferEntries ?? DEFAULT_WRITE_BUFFER_ENTRIES;
    prepareFolder(folder, dir);
    openDirs.add(dir);
    const lmdb = loadLmdb();
    try {
      this.#root = lmdb.open({
        path: dir,
        maxDbs: 4,
        mapSize: settings.mapSizeBytes ?? DEFAULT_MAP_SIZE,
        noSync: true,
        noMetaSync: true,
        useWritemap: settings.useWritemap ?? true,
        cache: false,
        keyEncoding: 'binary',
        encoding: 'binary',
      });
    } catch (error) {
      throw stateDirError(dir, error);
    }
    // Values: lmdb-js's msgpackr, with its structured-clone extensions (Map, Set, Date, BigInt, undefined, cycles).
    const values = { keyEncoding: 'binary', encoding: 'msgpack', encoder: { structuredClone: true, moreTypes: true }, cache: false };
    const index = { keyEncoding: 'binary', encoding: 'binary', cache: false };
    this.state = new LmdbTable(this.#root.openDB('state', values), this);
    this.processingTimers = new LmdbTable(this.#root.openDB('timers-processing', index), this);
    this.eventTimers = new LmdbTable(this.#root.openDB('timers-event', index), this);
    this.#tables = [this.state, this.processingTimers, this.eventTimers];
  }

  /** A write went to a buffer: the buffers go to lmdb once they hold `writeBufferEntries`. */
  written(): void {
    if (++this.#buffered >= this.#writeBufferEntries) this.flush();
  }

  /** Writes every buffered write to lmdb in one transaction. */
  flush(): void {
    if (this.#buffered === 0) return;
    const tables = this.#tables;
    this.#root.transactionSync(() => {
      for (const table of tables) {
        if (table.pending.size === 0) continue;
        const db = table.db;
        for (const [text, value] of table.pending) {
          const key = Buffer.from(text, 'latin1');
          if (value === TOMBSTONE) db.removeSync(key);
          else {
            try {
              checkCloneable(value);
              db.putSync(key, value);
            } catch (error) {
              throw new WeirError(
                'STATE_NOT_SERIALIZABLE',
                `${this.describeKey(key)} holds a value the disk state backend cannot write: ${(error as Error).message}`,
                {
                  hint: 'state values must be structured-cloneable: primitives, plain objects, arrays, Map, Set, Date, typed arrays; no functions, symbols or class instances with behaviour',
                  cause: error,
                },
              );
            }
          }
        }
      }
    });
    for (const table of tables) table.pending.clear();
    this.#buffered = 0;
  }

  /** A read transaction over lmdb as it is now (flushed first): the snapshot a checkpoint writes from. */
  snapshot(): LmdbTransaction {
    this.flush();
    return this.#root.useReadTransaction();
  }

  /** Closes lmdb and deletes the working folder. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const table of this.#tables) table.pending.clear();
    try {
      await this.#root.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
      openDirs.delete(this.dir);
    }
  }
}

/**
 * Throws for what structured clone (the heap backend's snapshot, node:v8) refuses and msgpackr
 * would write silently: functions and symbols, anywhere in the value.
 */
function checkCloneable(value: unknown): void {
  switch (typeof value) {
    case 'function':
      throw new Error('a function cannot be cloned');
    case 'symbol':
      throw new Error('a symbol cannot be cloned');
    case 'object':
      break;
    default:
      return;
  }
  if (value === null || ArrayBuffer.isView(value) || value instanceof Date) return;
  if (Array.isArray(value)) {
    for (const element of value) if (typeof element === 'object' || typeof element === 'function' || typeof element === 'symbol') checkCloneable(element);
  } else if (value instanceof Map) {
    for (const [key, entry] of value) {
      checkCloneable(key);
      checkCloneable(entry);
    }
  } else if (value instanceof Set) {
    for (const element of value) checkCloneable(element);
  } else {
    for (const key in value as object) checkCloneable((value as Record<string, unknown>)[key]);
  }
}

let nextInstance = 0;
/** The working folders of this thread's open stores. */
const openDirs = new Set<string>();

/**
 * Makes the instance's folder `dir` in `folder`, first deleting what processes no longer running
 * left in `folder` (a SIGKILL leaves its lmdb files). An unusable folder is the user's
 * configuration to fix.
 */
function prepareFolder(folder: string, dir: string): void {
  try {
    mkdirSync(folder, { recursive: true });
    for (const entry of readdirSync(folder)) {
      const pid = Number(entry.split('-')[0]);
      const path = join(folder, entry);
      // Left by a process that is gone (SIGKILL), or by an earlier attempt of this task in this
      // process (a restart terminates the old attempt's workers before it starts the new one, so
      // their backends were never disposed); never a backend open in this thread.
      const stale = pid === process.pid ? !openDirs.has(path) : Number.isInteger(pid) && pid > 0 && !isRunning(pid);
      if (stale) rmSync(path, { recursive: true, force: true });
    }
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw stateDirError(folder, error);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function stateDirError(dir: string, error: unknown): WeirError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOSPC' ? 'the disk is full' : code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? 'it is not writable' : (error as Error).message;
  return new WeirError('INVALID_CONFIG', `stateDir: the disk state backend cannot use its working folder ${dir}: ${why}`, {
    hint: 'set stateDir to a writable folder on a local disk with room for the state (or run the job with stateBackend: heap)',
    cause: error,
  });
}
