import { rmSync } from 'node:fs';
import { WeirError } from '../core/errors/weir-error.ts';
import { FIRST_KEY } from './lmdb-key-codec.ts';

/** Entries copied per write transaction. */
const ENTRIES_PER_TRANSACTION = 65_536;

/** What a load takes of an lmdb-js environment or database. */
interface LoadDatabase {
  openDB(name: string, options: object): LoadDatabase;
  getRange(options: { start: Uint8Array; snapshot: boolean }): Iterable<{ key: Buffer; value: unknown }>;
  putSync(key: Uint8Array, value: Uint8Array, options: { append: boolean }): boolean;
  transactionSync<T>(action: () => T): T;
  close(): Promise<void>;
}

/**
 * Loads a base's lmdb file (lmdb's compacting copy, as `<baseDir>/data.mdb`) into `root`, a new,
 * empty environment: the databases `names` are copied entry by entry, in key order, with
 * MDB_APPEND (each page filled once, no search), their values as bytes (no decoding). The copy is
 * opened read-only and `baseDir` deleted after. For a base's file that lmdb-compacted-meta.ts
 * does not recognize as a compacting copy it could make writable: such a file is never written to
 * (lmdb-js 3.5's lmdb crashed the process on writes into a reopened compacted copy), while an
 * environment filled by writes is sound. About 1.8 us an entry. Databases the base holds beyond
 * `names` (an older Weir's spilled keys) are left behind with the copy.
 */
export function loadLmdbBase(lmdb: { open(options: object): unknown }, root: unknown, baseDir: string, names: readonly string[]): void {
  const into = root as LoadDatabase;
  const source = lmdb.open({ path: baseDir, readOnly: true, maxDbs: 128, cache: false, keyEncoding: 'binary', encoding: 'binary' }) as LoadDatabase;
  try {
    for (const name of names) {
      const from = source.openDB(name, { keyEncoding: 'binary', encoding: 'binary', cache: false, create: false });
      const to = into.openDB(name, { keyEncoding: 'binary', encoding: 'binary', cache: false });
      const entries = from.getRange({ start: FIRST_KEY, snapshot: false })[Symbol.iterator]();
      for (let next = entries.next(); next.done !== true; ) {
        into.transactionSync(() => {
          for (let n = 0; n < ENTRIES_PER_TRANSACTION && next.done !== true; n++, next = entries.next()) {
            if (!to.putSync(next.value.key, next.value.value as Uint8Array, { append: true }))
              throw new WeirError('STATE_SNAPSHOT_CORRUPT', `an entry of "${name}" in the disk state backend's base is out of order: the file is damaged`, {
                fault: 'external',
                hint: 'restore from another checkpoint or savepoint',
              });
          }
        });
      }
    }
  } finally {
    void source.close().finally(() => rmSync(baseDir, { recursive: true, force: true }));
  }
}
