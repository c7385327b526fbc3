import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointOptions } from './checkpointing/checkpoint-options.ts';

/**
 * What travels on a channel from one subtask to another, in order: a channel delivers its messages
 * in the order they were sent, so a watermark, a watermark status or a barrier is never overtaken
 * by, and never overtakes, the records around it. `channel` is the channel's id. Between workers
 * each message is a structured clone, so a batch of records travels as one message.
 */
export type ChannelMessage =
  /**
   * A batch of records, with each record's event time when they have one. `recovered`: replayed
   * from a restored checkpoint's channel state, not sent by the channel's sender in this attempt
   * (no credit goes back for it).
   */
  | { kind: 'records'; channel: number; records: unknown[]; timestamps?: number[]; recovered?: true }
  /** Checkpoint barrier: where this checkpoint's (or savepoint's) state goes; `options`: it may go unaligned. */
  | { kind: 'barrier'; channel: number; location: CheckpointLocation; options?: CheckpointOptions }
  /** Event time reached `watermark` on this channel. */
  | { kind: 'watermark'; channel: number; watermark: number }
  /** Watermark status: an idle channel is left out of the minimum until it is active again. */
  | { kind: 'watermark-status'; channel: number; idle: boolean }
  /** The channel's upstream subtask has no more data (a bounded input ended). */
  | { kind: 'end-of-data'; channel: number }
  /** Flow control, the other way: the receiver returns `credits` batches of credit to the sender. */
  | { kind: 'credit'; channel: number; credits: number };
