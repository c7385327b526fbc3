import type { StateKey } from '../core/state/state-key.ts';
import type { DirtyKeysSpill } from './dirty-keys.ts';
import { KeyReader, KeyWriter, prefixEnd } from './lmdb-key-codec.ts';
import type { LmdbScratch } from './lmdb-scratch.ts';
import type { LmdbStore } from './lmdb-store.ts';

const EMPTY = Buffer.alloc(0);

/**
 * The disk backend's incremental tracker keeps changed keys past its memory budget here: one
 * scratch lmdb environment per epoch beside the state's (`spill-<epoch>` in the store's folder, so
 * an epoch goes whole, whatever it held, and no base copies it), its keys `structure (2 BE) | key
 * group index (2 BE) | key`, no values.
 */
export class LmdbDirtySpill implements DirtyKeysSpill {
  readonly #store: LmdbStore;
  readonly #epochs = new Map<number, LmdbScratch>();
  readonly #writer = new KeyWriter();
  readonly #reader = new KeyReader();

  constructor(store: LmdbStore) {
    this.#store = store;
  }

  write(epoch: number, structure: number, index: number, keys: Iterable<StateKey>): void {
    let scratch = this.#epochs.get(epoch);
    if (scratch === undefined) {
      scratch = this.#store.openScratch(`spill-${epoch}`);
      this.#epochs.set(epoch, scratch);
    }
    const db = scratch.db;
    const writer = this.#writer;
    scratch.transaction(() => {
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
    const db = this.#epochs.get(epoch)?.db;
    if (db === undefined) return [];
    const prefix = this.#writer.reset().uint16(structure).uint16(index).copy();
    const keys: StateKey[] = [];
    for (const { key } of db.getRange({ start: prefix, end: prefixEnd(prefix), snapshot: false })) keys.push(this.#reader.key(key, 4));
    return keys;
  }

  drop(epoch: number): void {
    const scratch = this.#epochs.get(epoch);
    if (scratch === undefined) return;
    this.#epochs.delete(epoch);
    // Closed once lmdb is done with it (its folder deleted then); a failure leaves the folder to the store's own deletion.
    scratch.close().catch(() => {});
  }
}
