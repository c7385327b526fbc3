import type { LmdbTransaction } from './lmdb-barrier.ts';
import type { KeyWriter } from './lmdb-key-codec.ts';
import { type BufferedTable, TOMBSTONE } from './lmdb-write-behind.ts';

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
  /** The thread's next implicit read uses a new read transaction (it sees what other threads committed). */
  resetReadTxn(): void;
  openDB(name: string, options: object): LmdbDatabase;
  close(): Promise<void>;
  /** lmdb's copy of the environment into folder `path` (MDB_CP_COMPACT when `compact`), in a thread of libuv's pool, from a read transaction of its own. */
  backup(path: string, compact: boolean): Promise<void>;
  getStats(): { entryCount: number };
  dropSync(): void;
}

/**
 * One lmdb database and the writes not yet in it: a write buffer keyed by the key's bytes (as a
 * latin1 string), holding the value as JavaScript (or {@link TOMBSTONE}), so reads see their
 * own writes at once and writes reach lmdb in batches (a layer per `writeBufferEntries`, written
 * by the flush thread while it stays readable here: lmdb-write-behind.ts; everything is written
 * before anything reads lmdb directly: a range, a count).
 */
export class LmdbTable implements BufferedTable {
  readonly db: LmdbDatabase;
  pending = new Map<string, unknown>();
  readonly flushing: Map<string, unknown>[] = [];
  /** Whether values are JavaScript values (checked before they are written), not bytes (the timer indexes). */
  readonly encoded: boolean;
  readonly #store: { written(): void };

  constructor(db: LmdbDatabase, store: { written(): void }, encoded: boolean) {
    this.db = db;
    this.#store = store;
    this.encoded = encoded;
  }

  /** The value under the key `key` holds (undefined when none). */
  get(key: KeyWriter): unknown {
    return this.lookup(key.text(), key.view());
  }

  /** The value under the key whose bytes are `bytes` and, as a latin1 string, `text` (undefined when none). */
  lookup(text: string, bytes: Uint8Array): unknown {
    const value = this.buffered(text);
    if (value !== undefined) return value === TOMBSTONE ? undefined : value;
    return this.db.get(bytes);
  }

  /** The value a write buffer (pending, or sent and not yet known written) holds under `text`: TOMBSTONE for a deletion, undefined when none. */
  buffered(text: string): unknown {
    if (this.pending.size > 0) {
      const value = this.pending.get(text);
      if (value !== undefined) return value;
    }
    const flushing = this.flushing;
    for (let i = flushing.length - 1; i >= 0; i--) {
      const value = (flushing[i] as Map<string, unknown>).get(text);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** Whether a write buffer (pending or in flight) holds a value, not only deletions. */
  buffersAValue(): boolean {
    for (const value of this.pending.values()) if (value !== TOMBSTONE) return true;
    for (const layer of this.flushing) for (const value of layer.values()) if (value !== TOMBSTONE) return true;
    return false;
  }

  put(key: KeyWriter, value: unknown): void {
    this.set(key.text(), value);
  }

  /** Buffers a write under the key whose bytes, as a latin1 string, are `text`. */
  set(text: string, value: unknown): void {
    this.pending.set(text, value);
    this.#store.written();
  }

  remove(key: KeyWriter): void {
    this.pending.set(key.text(), TOMBSTONE);
    this.#store.written();
  }

  /** Writes `value` under `key` at once: only inside LmdbStore.writeThrough (lmdb copies the key). */
  putNow(key: Uint8Array, value: unknown): void {
    this.db.putSync(key, value);
  }

  /** Deletes `key` at once: only inside LmdbStore.writeThrough. */
  removeNow(key: Uint8Array): void {
    this.db.removeSync(key);
  }

  /** Entries of `[start, end)` as lmdb holds them (flush first for the live view). */
  range(start: Uint8Array, end: Uint8Array, limit?: number, transaction?: LmdbTransaction): Iterable<{ key: Buffer; value: unknown }> {
    return this.db.getRange({ start, end, snapshot: false, ...(limit === undefined ? {} : { limit }), ...(transaction === undefined ? {} : { transaction }) });
  }
}
