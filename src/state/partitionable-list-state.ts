import type { ListState } from '../core/state/state-types.ts';

/**
 * How operator list state is handed out when the parallelism changes (Flink's
 * `OperatorStateHandle.Mode`): `split` spreads the entries of all old subtasks evenly over the new
 * ones (SPLIT_DISTRIBUTE); `union` gives every new subtask all entries (UNION).
 */
export type OperatorStateDistributionMode = 'split' | 'union';

/** A list of operator state (Flink's `PartitionableListState`): one list per subtask, not per key. */
export class PartitionableListState<T> implements ListState<T> {
  readonly name: string;
  readonly mode: OperatorStateDistributionMode;
  #list: T[];

  constructor(name: string, mode: OperatorStateDistributionMode, entries: T[] = []) {
    this.name = name;
    this.mode = mode;
    this.#list = entries;
  }

  get(): T[] {
    return this.#list;
  }

  add(value: T): void {
    this.#list.push(value);
  }

  addAll(values: T[]): void {
    for (const value of values) this.#list.push(value);
  }

  update(values: T[]): void {
    this.#list = values.slice();
  }

  clear(): void {
    this.#list = [];
  }
}
