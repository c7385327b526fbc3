import type { ListState } from '../core/state/state-types.ts';
import type { StateTable } from './state-table.ts';

/** {@link ListState} of the heap backend: the current key's list is a plain array. */
export class HeapListState<T> implements ListState<T> {
  readonly table: StateTable;

  constructor(table: StateTable) {
    this.table = table;
  }

  get(): T[] {
    return (this.table.get() as T[] | undefined) ?? [];
  }

  add(value: T): void {
    const list = this.table.get() as T[] | undefined;
    if (list === undefined) this.table.put([value]);
    else list.push(value);
  }

  addAll(values: T[]): void {
    if (values.length === 0) return;
    const list = this.table.get() as T[] | undefined;
    if (list === undefined) this.table.put(values.slice());
    else for (const value of values) list.push(value);
  }

  update(values: T[]): void {
    if (values.length === 0) this.table.remove();
    else this.table.put(values.slice());
  }

  clear(): void {
    this.table.remove();
  }
}
