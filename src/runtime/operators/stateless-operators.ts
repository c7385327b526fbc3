import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';

/** `map`: one record out per record in, with the input's timestamps. A record the function throws on goes to the error policy. */
export class MapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => OUT;
  readonly #errors: RecordErrorHandler;
  constructor(fn: (value: IN) => OUT, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#errors = new RecordErrorHandler(onError);
  }
  override open(context: OperatorContext): void {
    this.#errors.open(context);
  }
  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const out = new Array<OUT>(batch.length);
    let i = 0;
    try {
      for (; i < batch.length; i++) out[i] = fn(batch[i] as IN);
    } catch (error) {
      return this.#recover(batch, timestamps, out, i, error);
    }
    this.outputTimestamps = timestamps as number[] | undefined;
    return out;
  }
  /** The function threw on record `failed`: the records before it are done; the rest go one by one. */
  #recover(batch: IN[], timestamps: readonly number[] | undefined, done: OUT[], failed: number, error: unknown): OUT[] {
    const out = done.slice(0, failed);
    const stamps = timestamps?.slice(0, failed);
    this.#errors.onError(error, batch[failed], timestamps?.[failed]);
    const fn = this.#fn;
    for (let i = failed + 1; i < batch.length; i++) {
      try {
        out.push(fn(batch[i] as IN));
        stamps?.push(timestamps?.[i] as number);
      } catch (next) {
        this.#errors.onError(next, batch[i], timestamps?.[i]);
      }
    }
    this.outputTimestamps = stamps;
    return out;
  }
}

/** `filter`: the records for which the predicate holds. A record the predicate throws on goes to the error policy. */
export class FilterOperator<T> extends StreamOperator<T, T> {
  readonly #predicate: (value: T) => boolean;
  readonly #errors: RecordErrorHandler;
  constructor(predicate: (value: T) => boolean, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#predicate = predicate;
    this.#errors = new RecordErrorHandler(onError);
  }
  override open(context: OperatorContext): void {
    this.#errors.open(context);
  }
  processBatch(batch: T[], timestamps?: readonly number[]): T[] {
    const predicate = this.#predicate;
    const out: T[] = [];
    const kept: number[] | undefined = timestamps === undefined ? undefined : [];
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as T;
      let pass: boolean;
      try {
        pass = predicate(value);
      } catch (error) {
        this.#errors.onError(error, value, timestamps?.[i]);
        continue;
      }
      if (pass) {
        out.push(value);
        kept?.push(timestamps?.[i] as number);
      }
    }
    this.outputTimestamps = kept;
    return out;
  }
}

/** `flatMap`: any number of records out per record in, each with its input's timestamp. A record the function throws on (even midway) emits nothing and goes to the error policy. */
export class FlatMapOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: (value: IN) => Iterable<OUT>;
  readonly #errors: RecordErrorHandler;
  constructor(fn: (value: IN) => Iterable<OUT>, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#errors = new RecordErrorHandler(onError);
  }
  override open(context: OperatorContext): void {
    this.#errors.open(context);
  }
  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const out: OUT[] = [];
    const stamps: number[] | undefined = timestamps === undefined ? undefined : [];
    for (let i = 0; i < batch.length; i++) {
      const mark = out.length;
      try {
        for (const value of fn(batch[i] as IN)) out.push(value);
      } catch (error) {
        out.length = mark;
        this.#errors.onError(error, batch[i], timestamps?.[i]);
        continue;
      }
      if (stamps !== undefined) for (let j = mark; j < out.length; j++) stamps.push(timestamps?.[i] as number);
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
