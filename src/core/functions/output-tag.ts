import { WeirError } from '../errors/weir-error.ts';

/**
 * Names a side output (Flink's OutputTag): a process function emits to it with
 * `context.output(tag, value)`, a window sends its late records to it, and
 * `stream.getSideOutput(tag)` is the stream of what went there.
 *
 * ```ts
 * const rejected = new OutputTag<Payment>('rejected');
 * const accepted = payments.process({ processElement(p, ctx, out) { if (p.amount < 0) ctx.output(rejected, p); else out.collect(p); } });
 * accepted.getSideOutput(rejected).sinkTo(...);
 * ```
 */
export class OutputTag<T> {
  readonly id: string;
  /** Never set: carries the type of the side output's records. */
  declare readonly recordType?: T;

  constructor(id: string) {
    if (typeof id !== 'string' || id.length === 0) {
      throw new WeirError('INVALID_OUTPUT_TAG', `an OutputTag needs a non-empty id, got ${JSON.stringify(id)}`, {
        hint: "name the side output: new OutputTag<T>('late-payments')",
      });
    }
    this.id = id;
  }

  toString(): string {
    return `OutputTag(${this.id})`;
  }
}
