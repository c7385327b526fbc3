import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import { BatchSizeDebloater, type DebloatOptions } from './batch-size-debloater.ts';
import type { ChannelMessage } from './channel-message.ts';
import type { CheckpointOptions } from './checkpointing/checkpoint-options.ts';

/** Sends channel messages to wherever the channel's other end runs (another worker, or this one). */
export type ChannelTransport = (message: ChannelMessage) => void;

/**
 * The sending end of a channel, with credit-based flow control: the receiver grants a number of
 * batches, each batch sent uses one, and the receiver returns one after processing a batch. A
 * sender with no credit left is unavailable: its task takes no more input until credit returns,
 * which is how a slow sink slows the source while memory stays bounded.
 *
 * With debloating (`network.debloat`), the batches shrink under back pressure (Flink's buffer
 * debloating): each credit that comes back says the receiver consumed the oldest batch still
 * out, so the records acknowledged over the time the receiver had batches of this channel are its
 * consumption rate of the channel; a batch then holds about `target` of it over the credits, and a
 * larger batch goes out in pieces of that size, one credit each (a sender may then run below zero
 * credit, and waits until it is above it again). The work is per batch and per credit, never per record.
 */
export class ChannelWriter {
  readonly id: number;
  readonly targetSubtask: number;
  #credits: number;
  readonly #send: ChannelTransport;
  readonly #onCredit: () => void;
  readonly #debloater: BatchSizeDebloater | undefined;
  /** The size of each batch sent and not yet acknowledged by a credit, oldest first (only with debloating). */
  readonly #unacknowledged: number[] = [];
  /** Since when the receiver has had batches of this channel (time it is busy with them). */
  #busySince = 0;

  constructor(id: number, targetSubtask: number, initialCredits: number, send: ChannelTransport, onCredit: () => void, debloat?: DebloatOptions) {
    this.id = id;
    this.targetSubtask = targetSubtask;
    this.#credits = initialCredits;
    this.#send = send;
    this.#onCredit = onCredit;
    this.#debloater = debloat === undefined ? undefined : new BatchSizeDebloater(debloat, initialCredits);
  }

  /** The most records a batch of this channel holds now (Infinity without debloating). */
  get batchSize(): number {
    return this.#debloater?.batchSize ?? Number.POSITIVE_INFINITY;
  }

  /** The channel's consumption rate as measured, records per second (undefined without debloating or before a full period). */
  get throughput(): number | undefined {
    return this.#debloater?.throughput;
  }

  get available(): boolean {
    return this.#credits > 0;
  }

  get credits(): number {
    return this.#credits;
  }

  sendBatch(batch: unknown[], timestamps?: number[]): void {
    if (this.#debloater !== undefined) {
      const size = this.#debloater.batchSize;
      if (batch.length <= size) this.#sendCounted(batch, timestamps);
      else {
        for (let from = 0; from < batch.length; from += size) {
          this.#sendCounted(batch.slice(from, from + size), timestamps?.slice(from, from + size));
        }
      }
      return;
    }
    this.#sendOne(batch, timestamps);
  }

  #sendCounted(batch: unknown[], timestamps: number[] | undefined): void {
    if (this.#unacknowledged.length === 0) this.#busySince = performance.now();
    this.#unacknowledged.push(batch.length);
    this.#sendOne(batch, timestamps);
  }

  #sendOne(batch: unknown[], timestamps: number[] | undefined): void {
    this.#credits--;
    this.#send(
      timestamps === undefined ? { kind: 'records', channel: this.id, records: batch } : { kind: 'records', channel: this.id, records: batch, timestamps },
    );
  }

  /** Barriers, watermarks, watermark statuses and end-of-data need no credit: they are small, and must never wait behind it. */
  sendBarrier(location: CheckpointLocation, options?: CheckpointOptions): void {
    this.#send(options === undefined ? { kind: 'barrier', channel: this.id, location } : { kind: 'barrier', channel: this.id, location, options });
  }

  sendWatermark(watermark: number): void {
    this.#send({ kind: 'watermark', channel: this.id, watermark });
  }

  sendWatermarkStatus(idle: boolean): void {
    this.#send({ kind: 'watermark-status', channel: this.id, idle });
  }

  sendEndOfData(): void {
    this.#send({ kind: 'end-of-data', channel: this.id });
  }

  addCredit(credits: number): void {
    const unacknowledged = this.#unacknowledged;
    if (this.#debloater !== undefined && unacknowledged.length > 0) {
      let records = 0;
      for (let i = 0; i < credits && unacknowledged.length > 0; i++) records += unacknowledged.shift() as number;
      const now = performance.now();
      this.#debloater.add(records, now - this.#busySince);
      this.#busySince = now;
    }
    const wasUnavailable = this.#credits <= 0;
    this.#credits += credits;
    if (wasUnavailable && this.#credits > 0) this.#onCredit();
  }
}
