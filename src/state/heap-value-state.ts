import type { ValueState } from '../core/state/state-types.ts';
import type { StateTable } from './state-table.ts';

/** {@link ValueState} of the heap backend. */
export class HeapValueState<T> implements ValueState<T> {
  readonly table: StateTable;
  readonly defaultValue: T | undefined;

  constructor(table: StateTable, defaultValue: T | undefined) {
    this.table = table;
    this.defaultValue = defaultValue;
  }

  value(): T | undefined {
    const value = this.table.get() as T | undefined;
    return value === undefined ? this.defaultValue : value;
  }

  update(value: T): void {
    if (value === undefined) this.table.remove();
    else this.table.put(value);
  }

  clear(): void {
    this.table.remove();
  }
}
