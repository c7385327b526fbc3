import { StreamOperator } from '../../core/operator/stream-operator.ts';

/** `map`: one record out per record in, with the input's timestamps. */
export class MapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => OUT;
  constructor(fn: (value: IN) => OUT) {
    super();
    this.#fn = fn;
  }
  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const out = new Array<OUT>(batch.length);
    for (let i = 0; i < batch.length; i++) out[i] = fn(batch[i] as IN);
    this.outputTimestamps = timestamps as number[] | undefined;
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
  processBatch(batch: T[], timestamps?: readonly number[]): T[] {
    const predicate = this.#predicate;
    const out: T[] = [];
    if (timestamps === undefined) {
      for (let i = 0; i < batch.length; i++) {
        const value = batch[i] as T;
        if (predicate(value)) out.push(value);
      }
      return out;
    }
    const kept: number[] = [];
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as T;
      if (predicate(value)) {
        out.push(value);
        kept.push(timestamps[i] as number);
      }
    }
    this.outputTimestamps = kept;
    return out;
  }
}

/** `flatMap`: any number of records out per record in, each with its input's timestamp. */
export class FlatMapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => Iterable<OUT>;
  constructor(fn: (value: IN) => Iterable<OUT>) {
    super();
    this.#fn = fn;
  }
  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const out: OUT[] = [];
    if (timestamps === undefined) {
      for (let i = 0; i < batch.length; i++) {
        for (const value of fn(batch[i] as IN)) out.push(value);
      }
      return out;
    }
    const stamps: number[] = [];
    for (let i = 0; i < batch.length; i++) {
      const timestamp = timestamps[i] as number;
      for (const value of fn(batch[i] as IN)) {
        out.push(value);
        stamps.push(timestamp);
      }
    }
    this.outputTimestamps = stamps;
    return out;
  }
}

/** `union` and other pass-throughs. */
export class IdentityOperator<T> extends StreamOperator<T, T> {
  processBatch(batch: T[], timestamps?: readonly number[]): T[] {
    this.outputTimestamps = timestamps as number[] | undefined;
    return batch;
  }
}
