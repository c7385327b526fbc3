import type { AggregatingStateDescriptor, StateTtl } from '../core/state/state-descriptors.ts';
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../core/state/state-types.ts';
import type { LmdbStateTable } from './lmdb-state-table.ts';
import { isExpired, type TtlValue } from './state-table.ts';

/**
 * Keyed state with a time to live on the disk backend, with the heap's semantics (heap-ttl-states.ts):
 * each value (a list's element, a map's entry) is stored as { v, t }, t the processing time of its
 * last write (and read, with updateOnRead); an expired value reads as absent and is removed, unless
 * the TTL returns expired values not yet cleaned up; every access runs a step of the incremental
 * cleanup. A refreshed stamp is written back (a read copy is not the stored value).
 */

function readValue<T>(table: LmdbStateTable, ttl: StateTtl): T | undefined {
  table.cleanupStep();
  const entry = table.get() as TtlValue<T> | undefined;
  if (entry === undefined) return undefined;
  const now = table.clock();
  if (isExpired(entry, ttl, now) && !ttl.returnExpired) {
    table.remove();
    return undefined;
  }
  if (ttl.updateOnRead && entry.t !== now) {
    entry.t = now;
    table.put(entry);
  }
  return entry.v;
}

function writeValue(table: LmdbStateTable, value: unknown): void {
  table.cleanupStep();
  table.put({ v: value, t: table.clock() } satisfies TtlValue<unknown>);
}

export class LmdbTtlValueState<T> implements ValueState<T> {
  readonly #table: LmdbStateTable;
  readonly #ttl: StateTtl;
  readonly #defaultValue: T | undefined;

  constructor(table: LmdbStateTable, ttl: StateTtl, defaultValue: T | undefined) {
    this.#table = table;
    this.#ttl = ttl;
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    return readValue<T>(this.#table, this.#ttl) ?? this.#defaultValue;
  }

  update(value: T): void {
    if (value === undefined) this.clear();
    else writeValue(this.#table, value);
  }

  clear(): void {
    this.#table.remove();
  }
}

export class LmdbTtlReducingState<T> implements ReducingState<T> {
  readonly #table: LmdbStateTable;
  readonly #ttl: StateTtl;
  readonly #reduce: (a: T, b: T) => T;

  constructor(table: LmdbStateTable, ttl: StateTtl, reduce: (a: T, b: T) => T) {
    this.#table = table;
    this.#ttl = ttl;
    this.#reduce = reduce;
  }

  get(): T | undefined {
    return readValue<T>(this.#table, this.#ttl);
  }

  add(value: T): void {
    const current = readValue<T>(this.#table, this.#ttl);
    writeValue(this.#table, current === undefined ? value : this.#reduce(current, value));
  }

  clear(): void {
    this.#table.remove();
  }
}

export class LmdbTtlAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  readonly #table: LmdbStateTable;
  readonly #ttl: StateTtl;
  readonly #aggregate: AggregatingStateDescriptor<IN, ACC, OUT>;

  constructor(table: LmdbStateTable, ttl: StateTtl, aggregate: AggregatingStateDescriptor<IN, ACC, OUT>) {
    this.#table = table;
    this.#ttl = ttl;
    this.#aggregate = aggregate;
  }

  get(): OUT | undefined {
    const accumulator = readValue<ACC>(this.#table, this.#ttl);
    return accumulator === undefined ? undefined : this.#aggregate.getResult(accumulator);
  }

  add(value: IN): void {
    const accumulator = readValue<ACC>(this.#table, this.#ttl) ?? this.#aggregate.createAccumulator();
    writeValue(this.#table, this.#aggregate.add(value, accumulator));
  }

  clear(): void {
    this.#table.remove();
  }
}

/** A list whose elements expire one by one. `get` gives a new array of the live values. */
export class LmdbTtlListState<T> implements ListState<T> {
  readonly #table: LmdbStateTable;
  readonly #ttl: StateTtl;

  constructor(table: LmdbStateTable, ttl: StateTtl) {
    this.#table = table;
    this.#ttl = ttl;
  }

  get(): T[] {
    const table = this.#table;
    table.cleanupStep();
    const entries = table.get() as TtlValue<T>[] | undefined;
    if (entries === undefined) return [];
    const now = table.clock();
    const live = this.#ttl.returnExpired ? entries : entries.filter((entry) => !isExpired(entry, this.#ttl, now));
    let changed = live.length !== entries.length;
    if (this.#ttl.updateOnRead) {
      for (const entry of live) {
        if (entry.t !== now) changed = true;
        entry.t = now;
      }
    }
    if (changed) {
      if (live.length === 0) table.remove();
      else table.put(live);
    }
    return live.map((entry) => entry.v);
  }

  add(value: T): void {
    this.addAll([value]);
  }

  addAll(values: T[]): void {
    if (values.length === 0) return;
    const table = this.#table;
    table.cleanupStep();
    const now = table.clock();
    const entries = table.get() as TtlValue<T>[] | undefined;
    const added = values.map((v) => ({ v, t: now }));
    if (entries === undefined) table.put(added);
    else {
      entries.push(...added);
      table.put(entries);
    }
  }

  update(values: T[]): void {
    this.clear();
    this.addAll(values);
  }

  clear(): void {
    this.#table.remove();
  }
}

/** A map whose entries expire one by one (one lmdb entry each). */
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
