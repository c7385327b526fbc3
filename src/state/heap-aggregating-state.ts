import type { AggregateFunction } from '../core/state/state-descriptors.ts';
import type { AggregatingState } from '../core/state/state-types.ts';
import type { StateTable } from './state-table.ts';

/** {@link AggregatingState} of the heap backend: stores the accumulator, computes the result on `get`. */
export class HeapAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  readonly table: StateTable;
  readonly aggregate: AggregateFunction<IN, ACC, OUT>;

  constructor(table: StateTable, aggregate: AggregateFunction<IN, ACC, OUT>) {
    this.table = table;
    this.aggregate = aggregate;
  }

  get(): OUT | undefined {
    const accumulator = this.table.get() as ACC | undefined;
    return accumulator === undefined ? undefined : this.aggregate.getResult(accumulator);
  }

  add(value: IN): void {
    const aggregate = this.aggregate;
    const accumulator = this.table.get() as ACC | undefined;
    this.table.put(aggregate.add(value, accumulator === undefined ? aggregate.createAccumulator() : accumulator));
  }

  clear(): void {
    this.table.remove();
  }
}
