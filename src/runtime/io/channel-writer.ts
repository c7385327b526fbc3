import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { ChannelMessage } from './channel-message.ts';

/** Sends channel messages to wherever the channel's other end runs (another worker, or this one). */
export type ChannelTransport = (message: ChannelMessage) => void;

/**
 * The sending end of a channel, with credit-based flow control: the receiver grants a number of
 * batches, each batch sent uses one, and the receiver returns one after processing a batch. A
 * sender with no credit left is unavailable: its task takes no more input until credit returns,
 * which is how a slow sink slows the source while memory stays bounded.
 */
export class ChannelWriter {
  readonly id: number;
  readonly targetSubtask: number;
  #credits: number;
  readonly #send: ChannelTransport;
  readonly #onCredit: () => void;

  constructor(id: number, targetSubtask: number, initialCredits: number, send: ChannelTransport, onCredit: () => void) {
    this.id = id;
    this.targetSubtask = targetSubtask;
    this.#credits = initialCredits;
    this.#send = send;
    this.#onCredit = onCredit;
  }

  get available(): boolean {
    return this.#credits > 0;
  }

  get credits(): number {
    return this.#credits;
  }

  sendBatch(batch: unknown[], timestamps?: number[]): void {
    this.#credits--;
    this.#send(
      timestamps === undefined ? { kind: 'records', channel: this.id, records: batch } : { kind: 'records', channel: this.id, records: batch, timestamps },
    );
  }

  /** Barriers, watermarks, watermark statuses and end-of-data need no credit: they are small, and must never wait behind it. */
  sendBarrier(location: CheckpointLocation): void {
    this.#send({ kind: 'barrier', channel: this.id, location });
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
    const wasUnavailable = this.#credits <= 0;
    this.#credits += credits;
    if (wasUnavailable && this.#credits > 0) this.#onCredit();
  }
}
