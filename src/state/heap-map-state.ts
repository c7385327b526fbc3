import type { MapState } from '../core/state/state-types.ts';
import type { StateTable } from './state-table.ts';

const EMPTY: ReadonlyMap<unknown, unknown> = new Map();

/** {@link MapState} of the heap backend: the current key's map is a JavaScript Map, dropped when emptied. */
export class HeapMapState<K, V> implements MapState<K, V> {
  readonly table: StateTable;

  constructor(table: StateTable) {
    this.table = table;
  }

  #map(): Map<K, V> | undefined {
    return this.table.get() as Map<K, V> | undefined;
  }

  get(key: K): V | undefined {
    return this.#map()?.get(key);
  }

  put(key: K, value: V): void {
    const map = this.#map();
    if (map === undefined) this.table.put(new Map([[key, value]]));
    else map.set(key, value);
  }

  has(key: K): boolean {
    return this.#map()?.has(key) ?? false;
  }

  remove(key: K): void {
    const map = this.#map();
    if (map?.delete(key) && map.size === 0) this.table.remove();
  }

  entries(): IterableIterator<[K, V]> {
    return (this.#map() ?? (EMPTY as ReadonlyMap<K, V>)).entries();
  }

  keys(): IterableIterator<K> {
    return (this.#map() ?? (EMPTY as ReadonlyMap<K, V>)).keys();
  }

  values(): IterableIterator<V> {
    return (this.#map() ?? (EMPTY as ReadonlyMap<K, V>)).values();
  }

  isEmpty(): boolean {
    const map = this.#map();
    return map === undefined || map.size === 0;
  }

  clear(): void {
    this.table.remove();
  }
}
