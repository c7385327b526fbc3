import type { AggregatingStateDescriptor, StateTtl } from '../core/state/state-descriptors.ts';
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../core/state/state-types.ts';
import { isExpired, type StateTable, type TtlValue } from './state-table.ts';

/**
 * What the value, reducing, aggregating and list states with a time to live need of a backend's
 * table (the heap's StateTable, the disk backend's LmdbStateTable): the current key's stored value,
 * a step of incremental cleanup and the clock. A read value changed in place is written back with
 * `put`, so a backend whose reads are copies (lmdb) keeps the change too.
 */
export interface TtlTable {
  get(): unknown;
  put(value: unknown): void;
  remove(): void;
  cleanupStep(): void;
  readonly clock: () => number;
}

/**
 * Keyed state with a time to live (Flink's TtlValueState, TtlListState, ...): the table holds each
 * value (a list's element, a map's entry) as a {@link TtlValue}, stamped with the processing time
 * of its last write (and read, with updateOnRead). An expired value reads as absent (and is removed)
 * unless the TTL returns expired values not yet cleaned up. Every access also runs a step of the
 * table's incremental cleanup. The disk backend uses these too, but for its map state
 * (lmdb-ttl-states.ts: one lmdb entry per map entry).
 */

/** The live value of the current key (expired: removed, unless returned), refreshed on read when the TTL says so (and written back). */
function readValue<T>(table: TtlTable, ttl: StateTtl): T | undefined {
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

function writeValue(table: TtlTable, value: unknown): void {
  table.cleanupStep();
  table.put({ v: value, t: table.clock() } satisfies TtlValue<unknown>);
}

export class TtlValueState<T> implements ValueState<T> {
  readonly #table: TtlTable;
  readonly #ttl: StateTtl;
  readonly #defaultValue: T | undefined;

  constructor(table: TtlTable, ttl: StateTtl, defaultValue: T | undefined) {
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

export class TtlReducingState<T> implements ReducingState<T> {
  readonly #table: TtlTable;
  readonly #ttl: StateTtl;
  readonly #reduce: (a: T, b: T) => T;

  constructor(table: TtlTable, ttl: StateTtl, reduce: (a: T, b: T) => T) {
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

export class TtlAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  readonly #table: TtlTable;
  readonly #ttl: StateTtl;
  readonly #aggregate: AggregatingStateDescriptor<IN, ACC, OUT>;

  constructor(table: TtlTable, ttl: StateTtl, aggregate: AggregatingStateDescriptor<IN, ACC, OUT>) {
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
export class TtlListState<T> implements ListState<T> {
  readonly #table: TtlTable;
  readonly #ttl: StateTtl;

  constructor(table: TtlTable, ttl: StateTtl) {
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

/** A map whose entries expire one by one. */
export class TtlMapState<K, V> implements MapState<K, V> {
  readonly #table: StateTable;
  readonly #ttl: StateTtl;

  constructor(table: StateTable, ttl: StateTtl) {
    this.#table = table;
    this.#ttl = ttl;
  }

  get(key: K): V | undefined {
    return this.#entry(key)?.v;
  }

  put(key: K, value: V): void {
    const table = this.#table;
    table.cleanupStep();
    let map = table.get() as Map<K, TtlValue<V>> | undefined;
    if (map === undefined) {
      map = new Map();
      table.put(map);
    }
    map.set(key, { v: value, t: table.clock() });
  }

  has(key: K): boolean {
    return this.#entry(key) !== undefined;
  }

  remove(key: K): void {
    const map = this.#table.get() as Map<K, TtlValue<V>> | undefined;
    map?.delete(key);
    if (map?.size === 0) this.#table.remove();
  }

  *entries(): IterableIterator<[K, V]> {
    for (const [key, entry] of this.#live() ?? []) yield [key, entry.v];
  }

  *keys(): IterableIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): IterableIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  isEmpty(): boolean {
    return (this.#live()?.size ?? 0) === 0;
  }

  clear(): void {
    this.#table.remove();
  }

  /** One entry of the current key's map, if live (an expired one is removed, unless returned), refreshed on read. */
  #entry(key: K): TtlValue<V> | undefined {
    const table = this.#table;
    table.cleanupStep();
    const map = table.get() as Map<K, TtlValue<V>> | undefined;
    const entry = map?.get(key);
    if (map === undefined || entry === undefined) return undefined;
    const now = table.clock();
    if (!this.#ttl.returnExpired && isExpired(entry, this.#ttl, now)) {
      this.remove(key);
      return undefined;
    }
    if (this.#ttl.updateOnRead) entry.t = now;
    return entry;
  }

  /** The current key's map with its expired entries removed (unless returned) and the live ones refreshed on read. */
  #live(): Map<K, TtlValue<V>> | undefined {
    const table = this.#table;
    table.cleanupStep();
    const map = table.get() as Map<K, TtlValue<V>> | undefined;
    if (map === undefined) return undefined;
    const now = table.clock();
    const ttl = this.#ttl;
    for (const [key, entry] of map) {
      if (!ttl.returnExpired && isExpired(entry, ttl, now)) map.delete(key);
      else if (ttl.updateOnRead) entry.t = now;
    }
    if (map.size === 0) {
      table.remove();
      return undefined;
    }
    return map;
  }
}
