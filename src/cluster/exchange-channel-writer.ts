import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import { ChannelWriter } from '../runtime/io/channel-writer.ts';
import { encodeBarrierFrame, encodeEndFrame, encodeRecordsFrame, encodeWatermarkFrame, type SavepointBarrier } from './exchange-frames.ts';
import type { TaskOutput } from './task-output.ts';

const nothing = () => {};

/**
 * The sending end of one partition of an exchange topic, in place of a channel to another
 * subtask: a batch becomes one records frame in the task's transaction; the latest watermark and
 * idleness become a watermark frame at every checkpoint (read_committed readers see nothing
 * sooner anyway). A savepoint's checkpoint adds its barrier frame behind the watermark frame, in
 * the same transaction, and the task's final checkpoint (its input ended) its end frame, once.
 * Its availability is the task output's: back pressure as a channel's credit.
 */
export class ExchangeChannelWriter extends ChannelWriter {
  readonly #output: TaskOutput;
  readonly #topic: string;
  readonly #partition: number;
  readonly #from: number;
  #watermark = Number.NEGATIVE_INFINITY;
  #idle = false;
  /** What the last watermark frame said (undefined: none written yet). */
  #sealedWatermark: number | undefined;
  #sealedIdle: boolean | undefined;
  #endWritten = false;

  /**
   * `barrierOf`: the savepoint a checkpoint of the task is, if any (its barrier frame goes out with
   * it); `endsAt`: whether a checkpoint is the task's final one (its record says `ended`: the end
   * frame goes out with it).
   */
  constructor(
    output: TaskOutput,
    topic: string,
    partition: number,
    from: number,
    barrierOf: (checkpointId: number) => SavepointBarrier | undefined,
    endsAt: (checkpointId: number) => boolean = () => false,
  ) {
    super(partition, partition, 1, nothing, nothing);
    this.#output = output;
    this.#topic = topic;
    this.#partition = partition;
    this.#from = from;
    output.onSeal(
      (checkpointId) => {
        output.write([{ topic, partition, value: encodeWatermarkFrame(from, this.#watermark, this.#idle) }]);
        const barrier = barrierOf(checkpointId);
        if (barrier !== undefined) output.write([{ topic, partition, value: encodeBarrierFrame(from, barrier) }]);
        if (!this.#endWritten && endsAt(checkpointId)) {
          this.#endWritten = true;
          output.write([{ topic, partition, value: encodeEndFrame(from) }]);
        }
        this.#sealedWatermark = this.#watermark;
        this.#sealedIdle = this.#idle;
      },
      () => this.#watermark !== this.#sealedWatermark || this.#idle !== this.#sealedIdle,
    );
  }

  override get available(): boolean {
    return this.#output.available;
  }

  override sendBatch(batch: unknown[], timestamps?: number[]): void {
    this.#output.write([{ topic: this.#topic, partition: this.#partition, value: encodeRecordsFrame(this.#from, batch, timestamps) }]);
  }

  /** The task's checkpoint is its transaction's commit (the task output seals at the barrier). */
  override sendBarrier(_location: CheckpointLocation): void {}

  override sendWatermark(watermark: number): void {
    this.#watermark = watermark;
  }

  override sendWatermarkStatus(idle: boolean): void {
    this.#idle = idle;
  }

  /** The end frame goes out with the task's final checkpoint (its record says `ended`), not now: the two commit together. */
  override sendEndOfData(): void {}
}

/**
 * The task's transaction as one more output of its chain (a side output no stream reads): it
 * makes the chain wait while the transaction's queue is full, also when the task writes only to
 * sinks, and seals the transaction as the checkpoint's barrier passes.
 */
export class TransactionGateWriter extends ChannelWriter {
  readonly #output: TaskOutput;

  constructor(output: TaskOutput) {
    super(-1, -1, 1, nothing, nothing);
    this.#output = output;
  }

  override get available(): boolean {
    return this.#output.available;
  }

  override sendBatch(): void {}

  override sendBarrier(location: CheckpointLocation): void {
    this.#output.seal(location.checkpointId);
  }

  override sendWatermark(): void {}

  override sendWatermarkStatus(): void {}

  override sendEndOfData(): void {}
}
