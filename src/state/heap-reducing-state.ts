import type { ReducingState } from '../core/state/state-types.ts';
import type { StateTable } from './state-table.ts';

/** {@link ReducingState} of the heap backend. */
export class HeapReducingState<T> implements ReducingState<T> {
  readonly table: StateTable;
  readonly reduce: (a: T, b: T) => T;

  constructor(table: StateTable, reduce: (a: T, b: T) => T) {
    this.table = table;
    this.reduce = reduce;
  }

  get(): T | undefined {
    return this.table.get() as T | undefined;
  }

  add(value: T): void {
    const current = this.table.get() as T | undefined;
    this.table.put(current === undefined ? value : this.reduce(current, value));
  }

  clear(): void {
    this.table.remove();
  }
}
