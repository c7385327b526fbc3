import type { AggregateFunction } from '../core/state/state-descriptors.ts';
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../core/state/state-types.ts';
import type { LmdbStateTable } from './lmdb-state-table.ts';

/**
 * The state objects of the disk backend (lmdb-keyed-state-backend.ts), one class per kind, with
 * the heap's behaviour: each reads the current key's entry (decoded anew, or the write buffer's
 * value) and writes it back when it changes. Values read are copies: changing one in place does
 * not change the state (as with Flink's RocksDB backend); `update`, `add` and `put` do.
 */

export class LmdbValueState<T> implements ValueState<T> {
  readonly #table: LmdbStateTable;
  readonly #defaultValue: T | undefined;

  constructor(table: LmdbStateTable, defaultValue: T | undefined) {
    this.#table = table;
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    const value = this.#table.get() as T | undefined;
    return value === undefined ? this.#defaultValue : value;
  }

  update(value: T): void {
    if (value === undefined) this.#table.remove();
    else this.#table.put(value);
  }

  clear(): void {
    this.#table.remove();
  }
}

export class LmdbListState<T> implements ListState<T> {
  readonly #table: LmdbStateTable;

  constructor(table: LmdbStateTable) {
    this.#table = table;
  }

  get(): T[] {
    return (this.#table.get() as T[] | undefined) ?? [];
  }

  add(value: T): void {
    const list = this.#table.get() as T[] | undefined;
    if (list === undefined) this.#table.put([value]);
    else {
      list.push(value);
      this.#table.put(list);
    }
  }

  addAll(values: T[]): void {
    if (values.length === 0) return;
    const list = this.#table.get() as T[] | undefined;
    if (list === undefined) this.#table.put(values.slice());
    else {
      for (const value of values) list.push(value);
      this.#table.put(list);
    }
  }

  update(values: T[]): void {
    if (values.length === 0) this.#table.remove();
    else this.#table.put(values.slice());
  }

  clear(): void {
    this.#table.remove();
  }
}

/** A map state: one lmdb entry per user key (primitive user keys: the disk backend keys by their bytes). */
export class LmdbMapState<K, V> implements MapState<K, V> {
  readonly #table: LmdbStateTable;

  constructor(table: LmdbStateTable) {
    this.#table = table;
  }

  get(key: K): V | undefined {
    return this.#table.getEntry(key) as V | undefined;
  }

  put(key: K, value: V): void {
    this.#table.putEntry(key, value);
  }

  has(key: K): boolean {
    return this.#table.getEntry(key) !== undefined;
  }

  remove(key: K): void {
    this.#table.removeEntry(key);
  }

  entries(): IterableIterator<[K, V]> {
    return (this.#table.entries() as [K, V][])[Symbol.iterator]();
  }

  *keys(): IterableIterator<K> {
    for (const [key] of this.#table.entries()) yield key as K;
  }

  *values(): IterableIterator<V> {
    for (const [, value] of this.#table.entries()) yield value as V;
  }

  isEmpty(): boolean {
    return !this.#table.hasEntries();
  }

  clear(): void {
    this.#table.removeAll();
  }
}

export class LmdbReducingState<T> implements ReducingState<T> {
  readonly #table: LmdbStateTable;
  readonly #reduce: (a: T, b: T) => T;

  constructor(table: LmdbStateTable, reduce: (a: T, b: T) => T) {
    this.#table = table;
    this.#reduce = reduce;
  }

  get(): T | undefined {
    return this.#table.get() as T | undefined;
  }

  add(value: T): void {
    const current = this.#table.get() as T | undefined;
    this.#table.put(current === undefined ? value : this.#reduce(current, value));
  }

  clear(): void {
    this.#table.remove();
  }
}

export class LmdbAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  readonly #table: LmdbStateTable;
  readonly #aggregate: AggregateFunction<IN, ACC, OUT>;

  constructor(table: LmdbStateTable, aggregate: AggregateFunction<IN, ACC, OUT>) {
    this.#table = table;
    this.#aggregate = aggregate;
  }

  get(): OUT | undefined {
    const accumulator = this.#table.get() as ACC | undefined;
    return accumulator === undefined ? undefined : this.#aggregate.getResult(accumulator);
  }

  add(value: IN): void {
    const aggregate = this.#aggregate;
    const accumulator = this.#table.get() as ACC | undefined;
    this.#table.put(aggregate.add(value, accumulator === undefined ? aggregate.createAccumulator() : accumulator));
  }

  clear(): void {
    this.#table.remove();
  }
}
