import type { StateKey } from '../core/state/state-key.ts';
import type { DirtyKeysSpill } from './dirty-keys.ts';
import { KeyReader, KeyWriter, prefixEnd } from './lmdb-key-codec.ts';
import { type LmdbDatabase, type LmdbStore, SPILL_DATABASE_PREFIX } from './lmdb-store.ts';

const EMPTY = Buffer.alloc(0);

/**
 * The disk backend's incremental tracker keeps changed keys past its memory budget here: one lmdb
 * database per epoch (`changes-<epoch>`, so an epoch goes with one drop, whatever it held), its keys
 * `structure (2 BE) | key group index (2 BE) | key`, no values.
 */
export class LmdbDirtySpill implements DirtyKeysSpill {
  readonly #store: LmdbStore;
  readonly #databases = new Map<number, LmdbDatabase>();
  readonly #writer = new KeyWriter();
  readonly #reader = new KeyReader();

  constructor(store: LmdbStore) {
    this.#store = store;
  }

  write(epoch: number, structure: number, index: number, keys: Iterable<StateKey>): void {
    let database = this.#databases.get(epoch);
    if (database === undefined) {
      database = this.#store.openDatabase(`${SPILL_DATABASE_PREFIX}${epoch}`);
      this.#databases.set(epoch, database);
    }
    const db = database;
    const writer = this.#writer;
    this.#store.transaction(() => {
      for (const key of keys)
        db.putSync(
          writer
            .reset()
            .uint16(structure)
            .uint16(index)
            .value(key, () => 'a changed key')
            .view(),
          EMPTY,
        );
    });
  }

  read(epoch: number, structure: number, index: number): StateKey[] {
    const db = this.#databases.get(epoch);
    if (db === undefined) return [];
    const prefix = this.#writer.reset().uint16(structure).uint16(index).copy();
    const keys: StateKey[] = [];
    for (const { key } of db.getRange({ start: prefix, end: prefixEnd(prefix), snapshot: false })) keys.push(this.#reader.key(key, 4));
    return keys;
  }

  drop(epoch: number): void {
    const db = this.#databases.get(epoch);
    if (db === undefined) return;
    this.#databases.delete(epoch);
    db.dropSync();
  }
}
