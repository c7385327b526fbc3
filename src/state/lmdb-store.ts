import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { WeirError } from '../core/errors/weir-error.ts';
import type { LmdbBarrier, LmdbTransaction } from './lmdb-barrier.ts';
import { loadLmdbBase } from './lmdb-base-load.ts';
import { repairCompactedCopy } from './lmdb-compacted-meta.ts';
import { copyLmdb, serveLmdbCopies } from './lmdb-copy-service.ts';
import { type LmdbCopy, LmdbCopyStarts, STARTING_COPY_BUFFER_FACTOR } from './lmdb-copy-starts.ts';
import { FIRST_KEY } from './lmdb-key-codec.ts';
import { type LmdbScratch, openLmdbScratch } from './lmdb-scratch.ts';
import { type LmdbDatabase, LmdbTable } from './lmdb-table.ts';
import { newStoreFolder, releaseStoreFolder, restoreFileMoved, stateDirError } from './lmdb-working-folder.ts';
import { LmdbWriteBehind, TOMBSTONE } from './lmdb-write-behind.ts';

export type { LmdbBarrier, LmdbDatabase, LmdbTransaction };
export { LmdbTable };

/** Memory settings of the disk backend (the defaults fit a 2-core, 4 GB machine). */
export interface LmdbStoreSettings {
  /** The initial memory map (address space, not memory); lmdb-js grows it as the file grows. Default 64 MiB. */
  mapSizeBytes?: number;
  /** Writes buffered on the JavaScript side before they go to lmdb in one transaction. Default 8192. */
  writeBufferEntries?: number;
  /**
   * lmdb writes pages in place in its memory map (MDB_WRITEMAP) instead of copying them to the
   * file at each commit: cheaper random writes (bench/state-micro.ts), but lmdb-js 3.5's lmdb
   * aborts the process in write-map mode (`Assertion 'x <= dl[0].mid' failed in
   * mdb_freelist_save()`) when a transaction frees pages it dirtied itself while no free page was
   * reclaimable: a read transaction held a while (a snapshot being written) made that happen within
   * 2M random changes (test/unit/state/lmdb-write-map.test.ts says more). Default false; true only
   * for measurements.
   */
  useWritemap?: boolean;
  /**
   * Incremental checkpoints: the changed keys the tracker holds in memory (about 60-80 bytes each)
   * before it moves them into lmdb beside the state. Default 1,000,000.
   */
  changedKeysInMemory?: number;
}

const DEFAULT_MAP_SIZE = 64 * 1024 * 1024;
const DEFAULT_WRITE_BUFFER_ENTRIES = 8192;

/** The databases of a store: the state and the two timer indexes (what a base's load copies). */
const STATE_DATABASES = ['state', 'timers-processing', 'timers-event'] as const;

/** Names of the databases a base of an older Weir holds its tracker's spilled keys in (`changes-<epoch>`; dropped on open). */
const SPILL_DATABASE_PREFIX = 'changes-';

export { TOMBSTONE };

/** Loads lmdb on first use: a job on the heap backend never loads the native module. */
let lmdbModule: { open(options: object): LmdbDatabase } | undefined;
function loadLmdb(): { open(options: object): LmdbDatabase } {
  lmdbModule ??= createRequire(import.meta.url)('lmdb') as { open(options: object): LmdbDatabase };
  return lmdbModule;
}

/**
 * In the main thread, before it starts the threads that host tasks: their disk backends' bases are
 * copied here, where a thread's termination cannot reach the copy (lmdb-copy-service.ts). lmdb is
 * loaded on the first copy only.
 */
export function serveDiskBackendCopies(): void {
  serveLmdbCopies((options) => loadLmdb().open(options));
}

/** An encoder as lmdb-js takes it (msgpackr's Packr: encoder and decoder with shared record structures). */
export interface ValueCodec {
  encode(value: unknown): Uint8Array;
  decode(bytes: Uint8Array): unknown;
}

/**
 * The codec of a store's values: msgpackr (the one lmdb-js depends on, loaded from lmdb's own
 * folder), with its structured-clone extensions (Map, Set, Date, BigInt, undefined, cycles), and
 * record structures shared by every value of the store and held in memory only (the local store
 * never outlives its process: state comes back from checkpoints), so a value of a known shape is
 * a structure id and its field values (`{ count, sum, last }` of small integers: 4 bytes instead
 * of 22 with its field names) and decoding it reads no field names. Beyond 32 shapes a value
 * carries its own definition, as before. lmdb-js encodes and decodes with it (an encoder it is
 * given is used as is): reads decode straight from lmdb-js's one read buffer, as `copyBuffers`
 * makes decoded binary data a copy.
 */
function newValueCodec(structures: string[][] = []): ValueCodec & { structures: string[][] } {
  const require = createRequire(import.meta.url);
  const msgpackr = createRequire(require.resolve('lmdb'))('msgpackr') as { Packr: new (options: object) => ValueCodec & { structures: string[][] } };
  return new msgpackr.Packr({ structuredClone: true, moreTypes: true, structures: structures.map((fields) => [...fields]), copyBuffers: true });
}

/**
 * An lmdb file (a base's) a store opens instead of an empty one: its bytes, or a file a restore
 * streamed it into ({@link reserveRestoreFile}), moved in; and the record structures its values
 * were encoded with.
 */
export interface LmdbStoreBase {
  file: Uint8Array | { path: string };
  structures: string[][];
}

/**
 * The lmdb environment of one keyed backend: a local working folder (cleared when opened: the
 * state comes back from the checkpoint, never from this folder), the state database and one timer
 * index per time domain. Durability comes from checkpoints, so lmdb never syncs to disk (noSync,
 * noMetaSync) and lmdb-js keeps no object cache (`cache: false`): memory is the write buffer and
 * the OS page cache over the memory map.
 */
export class LmdbStore {
  readonly dir: string;
  readonly state: LmdbTable;
  readonly processingTimers: LmdbTable;
  readonly eventTimers: LmdbTable;
  readonly #root: LmdbDatabase;
  /** lmdb.open's options for this store's environment (the flush thread and a copy open it with them too). */
  readonly #environment: object;
  readonly #tables: LmdbTable[];
  readonly #writeBufferEntries: number;
  readonly #codec: ValueCodec & { structures: string[][] };
  readonly #writeBehind: LmdbWriteBehind;
  #buffered = 0;
  /** Copies whose read transaction may not have begun yet (startCopy). */
  readonly #starting = new LmdbCopyStarts();
  /** Scratch environments open beside the state's (openScratch). */
  readonly #scratches = new Set<LmdbScratch>();
  /** Names what an encoding failure was about (the state of a key). */
  describeKey: (key: Buffer) => string = () => 'a state';
  #closed = false;

  /**
   * `folder`: the backend's working folder. lmdb lives in a subfolder of this instance
   * (`<pid>-<thread>-<n>`), so a new instance never opens files another one has open; what
   * earlier processes and attempts left is deleted first. `base`: lmdb's file to open (a base's, as
   * a restore brings it) instead of an empty one.
   */
  constructor(folder: string, settings: LmdbStoreSettings = {}, base?: LmdbStoreBase) {
    const dir = newStoreFolder(folder);
    this.dir = dir;
    this.#writeBufferEntries = settings.writeBufferEntries ?? DEFAULT_WRITE_BUFFER_ENTRIES;
    // A base's file is lmdb's compacted copy: opened once made writable (lmdb-compacted-meta.ts),
    // else loaded into a new environment in key order (lmdb-base-load.ts) from `<dir>/base`.
    let load: string | undefined;
    if (base !== undefined) {
      try {
        const file = join(dir, 'data.mdb');
        if (base.file instanceof Uint8Array) writeFileSync(file, base.file);
        else {
          renameSync(base.file.path, file);
          restoreFileMoved(base.file.path);
        }
        if (!repairCompactedCopy(file)) {
          load = join(dir, 'base');
          mkdirSync(load, { recursive: true });
          renameSync(file, join(load, 'data.mdb'));
        }
      } catch (error) {
        throw stateDirError(dir, error);
      }
    }
    const lmdb = loadLmdb();
    const environment = {
      path: dir,
      // The state and two timer indexes (a base of an older Weir also holds its tracker's spilled keys, one database per epoch).
      maxDbs: 128,
      mapSize: settings.mapSizeBytes ?? DEFAULT_MAP_SIZE,
      noSync: true,
      noMetaSync: true,
      useWritemap: settings.useWritemap ?? false,
      cache: false,
      keyEncoding: 'binary',
      encoding: 'binary',
    };
    this.#environment = environment;
    try {
      this.#root = lmdb.open(environment);
      if (load !== undefined) loadLmdbBase(lmdb, this.#root, load, STATE_DATABASES);
      // A base of an older Weir holds the databases its tracker spilled keys into: not state.
      else if (base !== undefined) this.#dropDatabases(SPILL_DATABASE_PREFIX);
    } catch (error) {
      throw error instanceof WeirError ? error : stateDirError(dir, error);
    }
    this.#codec = newValueCodec(base?.structures);
    const values = { keyEncoding: 'binary', encoder: this.#codec, cache: false };
    const index = { keyEncoding: 'binary', encoding: 'binary', cache: false };
    this.state = new LmdbTable(this.#root.openDB('state', values), this, true);
    this.processingTimers = new LmdbTable(this.#root.openDB('timers-processing', index), this, false);
    this.eventTimers = new LmdbTable(this.#root.openDB('timers-event', index), this, false);
    this.#tables = [this.state, this.processingTimers, this.eventTimers];
    const root = this.#root;
    const codec = this.#codec;
    this.#writeBehind = new LmdbWriteBehind(
      {
        tables: this.#tables,
        encode: (value) => codec.encode(value),
        readTransaction: () => {
          root.resetReadTxn();
          return root.useReadTransaction();
        },
        renewReads: () => root.resetReadTxn(),
        describeKey: (key) => this.describeKey(key),
        writeFailed: (error) => stateDirError(dir, error),
      },
      environment,
      STATE_DATABASES,
    );
  }

  /** Drops the named databases whose names start with `prefix`. */
  #dropDatabases(prefix: string): void {
    for (const name of this.databaseNames())
      if (name.startsWith(prefix)) this.#root.openDB(name, { keyEncoding: 'binary', encoding: 'binary', cache: false }).dropSync();
  }

  /** The names of the environment's databases (the state, the timer indexes, spilled changed keys). */
  databaseNames(): string[] {
    const names: string[] = [];
    for (const { key } of this.#root.getRange({ start: FIRST_KEY, snapshot: false })) names.push(Buffer.from(key).toString('latin1').replace(/\0$/, ''));
    return names;
  }

  /**
   * A write went to a buffer: the buffer is sent to the flush thread once it holds
   * `writeBufferEntries`, unless writes must wait: a barrier's transaction not taken yet, a copy's
   * read transaction not begun yet (startCopy), or the flush thread has as many layers as it takes. Then it is looked at
   * again every 256 writes, and sent at the latest at 8 times that size (a barrier then is taken,
   * a copy is no longer exact: see startCopy).
   */
  written(): void {
    const buffered = ++this.#buffered;
    if (buffered < this.#writeBufferEntries) return;
    if (buffered < this.#writeBufferEntries * STARTING_COPY_BUFFER_FACTOR) {
      if (buffered !== this.#writeBufferEntries && buffered % 256 !== 0) return;
      const behind = this.#writeBehind;
      behind.reap();
      if (behind.holding || behind.full || !this.#starting.allBegun()) return;
    }
    this.#send();
  }

  /** Sends the buffered writes to the flush thread (after the layers before them, the barriers they wait for taken). */
  #send(): void {
    if (this.#buffered === 0) return;
    const behind = this.#writeBehind;
    // A barrier waiting for the layers before it is taken before anything after it goes.
    if (behind.holding) behind.settle();
    this.#starting.beforeStateWrite();
    behind.send();
    this.#buffered = 0;
  }

  /** Every buffered write is in lmdb when this returns (the task waits for the flush thread), and every barrier is taken. */
  flush(): void {
    this.#send();
    this.#writeBehind.settle();
  }

  /** Every barrier is taken when this returns (the task waits for the layers before them). */
  settle(): void {
    this.#writeBehind.settle();
  }

  /**
   * A checkpoint barrier: the buffered writes go to the flush thread and the barrier's read
   * transaction is taken once they are written, before any later write reaches lmdb (LmdbBarrier).
   */
  barrier(): LmdbBarrier {
    this.#send();
    return this.#writeBehind.barrier();
  }

  /** A read transaction over lmdb as it is now, every buffered write in it (the task waits): a snapshot taken at once. */
  snapshot(): LmdbTransaction {
    this.flush();
    this.#root.resetReadTxn();
    return this.#root.useReadTransaction();
  }

  /** The record structures values were encoded with so far (a base names them: its values decode with them). */
  valueStructures(): string[][] {
    return this.#codec.structures.map((fields) => [...fields]);
  }

  /**
   * Starts a copy of lmdb into `<folder>/data.mdb` holding the state at `barrier` (taken from
   * {@link barrier} just before), written in a thread of libuv's pool (of the main thread when it
   * serves copies: lmdb-copy-service.ts): the task goes on meanwhile.
   * The copy starts once the barrier's transaction is taken (its writes are in lmdb). lmdb's
   * compacting copy (MDB_CP_COMPACT): the pages in use, renumbered, without the free ones a store
   * gathers as it is rewritten. (A compacted file has no free pages at all: with the write map, its
   * first transaction that frees pages it dirtied killed the process; see useWritemap.)
   *
   * The copy holds lmdb as it is when its own read transaction begins, in that thread, a moment
   * after it starts. Until it has begun, the write buffer holds the writes (up to 8 times its
   * size) instead of sending them, so the copy holds the state at the barrier: then
   * {@link LmdbCopy.exact} stays true. A write that cannot wait makes it false (the buffer at that
   * limit; any flush: a range read that needs the live view, as timers firing or a map state's
   * entries, a range delete, the next barrier): the copy may hold writes made after the barrier,
   * and its reader corrects them. The copy has begun once its file has bytes: lmdb writes them only
   * from inside that transaction (usually within milliseconds, before such a read comes).
   */
  startCopy(folder: string, barrier: LmdbBarrier, onBegun?: () => void): LmdbCopy {
    try {
      mkdirSync(folder, { recursive: true });
    } catch (error) {
      throw stateDirError(folder, error);
    }
    const copy = this.#starting.add(join(folder, 'data.mdb'), onBegun);
    let started: Promise<void> | undefined;
    barrier.whenTaken(() => {
      started = copyLmdb(this.#root, this.#environment, folder);
    });
    copy.done = barrier.taken
      .then(() => {
        if (barrier.failure !== undefined) throw barrier.failure;
        return started;
      })
      .finally(() => this.#starting.ended(copy));
    return copy;
  }

  /** Deletes the entries of `[start, end)` from `table` (flushed first). */
  removeRange(table: LmdbTable, start: Uint8Array, end: Uint8Array): void {
    this.flush();
    const keys: Buffer[] = [];
    for (const { key } of table.db.getRange({ start, end, snapshot: false })) keys.push(Buffer.from(key));
    if (keys.length === 0) return;
    this.#starting.beforeStateWrite();
    const db = table.db;
    this.#root.transactionSync(() => {
      for (const key of keys) db.removeSync(key);
    });
  }

  /**
   * A database of its own lmdb environment in `<dir>/<name>`, beside the state's: scratch data such
   * as the incremental tracker's spilled keys (lmdb-scratch.ts), closed with the store at the latest.
   */
  openScratch(name: string): LmdbScratch {
    const scratch = openLmdbScratch(join(this.dir, name), loadLmdb(), () => this.#scratches.delete(scratch));
    this.#scratches.add(scratch);
    return scratch;
  }

  /**
   * Runs `action` in one write transaction whose writes ({@link LmdbTable.putNow},
   * {@link LmdbTable.removeNow}) go straight into lmdb, past the write buffer: a restore's bulk
   * writes, without a buffered copy of each key and value. The buffer is flushed first, so a
   * buffered write of the same key cannot land after them.
   */
  writeThrough(action: () => void): void {
    this.flush();
    this.#starting.beforeStateWrite();
    try {
      this.#root.transactionSync(action);
    } catch (error) {
      if (error instanceof WeirError) throw error;
      // The disk (full, not writable) is the folder's; anything else is a value or key lmdb refused.
      if (typeof (error as NodeJS.ErrnoException).code === 'string') throw stateDirError(this.dir, error);
      throw new WeirError('STATE_NOT_SERIALIZABLE', `the disk state backend cannot write restored state: ${(error as Error).message}`, {
        hint: 'the checkpoint holds a value or key lmdb does not take (a key over 1978 bytes, a value msgpackr cannot encode); restore it with stateBackend: heap',
        cause: error,
      });
    }
  }

  /** How many entries `table` holds in lmdb (flushed first): lmdb's own count, O(1). */
  entryCount(table: LmdbTable): number {
    this.flush();
    return table.db.getStats().entryCount;
  }

  /** Closes lmdb (and the scratch environments) and deletes the working folder. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#scratches].map((scratch) => scratch.close()));
    try {
      await this.#writeBehind.close();
      for (const table of this.#tables) {
        table.pending.clear();
        table.flushing.length = 0;
      }
      await this.#root.close();
    } finally {
      releaseStoreFolder(this.dir);
    }
  }
}
