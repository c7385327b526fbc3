import type { StateTtl } from '../core/state/state-descriptors.ts';
import type { MapState } from '../core/state/state-types.ts';
import type { LmdbStateTable } from './lmdb-state-table.ts';
import { isExpired, type TtlValue } from './state-table.ts';

/**
 * Map state with a time to live on the disk backend, with the heap's semantics (heap-ttl-states.ts,
 * whose value, list, reducing and aggregating states the disk backend uses as they are): each entry
 * is one lmdb entry { v, t }, t the processing time of its last write (and read, with
 * updateOnRead); an expired entry reads as absent and is removed, unless the TTL returns expired
 * values not yet cleaned up; every access runs a step of the incremental cleanup. A refreshed stamp
 * is written back (a read copy is not the stored value).
 */
export class LmdbTtlMapState<K, V> implements MapState<K, V> {
  readonly #table: LmdbStateTable;
  readonly #ttl: StateTtl;

  constructor(table: LmdbStateTable, ttl: StateTtl) {
    this.#table = table;
    this.#ttl = ttl;
  }

  get(key: K): V | undefined {
    return this.#entry(key)?.v;
  }

  put(key: K, value: V): void {
    const table = this.#table;
    table.cleanupStep();
    table.putEntry(key, { v: value, t: table.clock() } satisfies TtlValue<V>);
  }

  has(key: K): boolean {
    return this.#entry(key) !== undefined;
  }

  remove(key: K): void {
    this.#table.removeEntry(key);
  }

  *entries(): IterableIterator<[K, V]> {
    for (const [key, entry] of this.#live()) yield [key, entry.v];
  }

  *keys(): IterableIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): IterableIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  isEmpty(): boolean {
    return this.#live().length === 0;
  }

  clear(): void {
    this.#table.removeAll();
  }

  /** One entry, if live (an expired one is removed, unless returned), refreshed on read. */
  #entry(key: K): TtlValue<V> | undefined {
    const table = this.#table;
    table.cleanupStep();
    const entry = table.getEntry(key) as TtlValue<V> | undefined;
    if (entry === undefined) return undefined;
    const now = table.clock();
    if (!this.#ttl.returnExpired && isExpired(entry, this.#ttl, now)) {
      table.removeEntry(key);
      return undefined;
    }
    if (this.#ttl.updateOnRead && entry.t !== now) {
      entry.t = now;
      table.putEntry(key, entry);
    }
    return entry;
  }

  /** The current key's live entries (expired ones removed, unless returned; live ones refreshed on read). */
  #live(): [K, TtlValue<V>][] {
    const table = this.#table;
    table.cleanupStep();
    const now = table.clock();
    const ttl = this.#ttl;
    const live: [K, TtlValue<V>][] = [];
    for (const [key, value] of table.entries() as [K, TtlValue<V>][]) {
      if (!ttl.returnExpired && isExpired(value, ttl, now)) {
        table.removeEntry(key);
        continue;
      }
      if (ttl.updateOnRead && value.t !== now) {
        value.t = now;
        table.putEntry(key, value);
      }
      live.push([key, value]);
    }
    return live;
  }
}
