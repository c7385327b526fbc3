import { StreamOperator } from '../stream-operator.ts';

/** `map`: one record out per record in. */
export class MapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => OUT;
  constructor(fn: (value: IN) => OUT) {
    super();
    this.#fn = fn;
  }
  processBatch(batch: IN[]): OUT[] {
    const fn = this.#fn;
    const out = new Array<OUT>(batch.length);
    for (let i = 0; i < batch.length; i++) out[i] = fn(batch[i] as IN);
    return out;
  }
}

/** `filter`: the records for which the predicate holds. */
export class FilterOperator<T> extends StreamOperator<T, T> {
  readonly #predicate: (value: T) => boolean;
  constructor(predicate: (value: T) => boolean) {
    super();
    this.#predicate = predicate;
  }
  processBatch(batch: T[]): T[] {
    const predicate = this.#predicate;
    const out: T[] = [];
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as T;
      if (predicate(value)) out.push(value);
    }
    return out;
  }
}

/** `flatMap`: any number of records out per record in. */
export class FlatMapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => Iterable<OUT>;
  constructor(fn: (value: IN) => Iterable<OUT>) {
    super();
    this.#fn = fn;
  }
  processBatch(batch: IN[]): OUT[] {
    const fn = this.#fn;
    const out: OUT[] = [];
    for (let i = 0; i < batch.length; i++) {
      for (const value of fn(batch[i] as IN)) out.push(value);
    }
    return out;
  }
}

/** `union` and other pass-throughs. */
export class IdentityOperator<T> extends StreamOperator<T, T> {
  processBatch(batch: T[]): T[] {
    return batch;
  }
}
