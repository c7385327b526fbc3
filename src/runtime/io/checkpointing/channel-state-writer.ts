import { OperatorStateBackend } from '../../../state/operator-state-backend.ts';
import { serializeStateValue } from '../../../state/state-snapshot-format.ts';

/** The version of the channel state entries this Weir writes; a reader refuses newer ones. */
export const CHANNEL_STATE_VERSION = 1;

/** The list state of the channel state file that holds the entries. */
export const CHANNEL_STATE_LIST = 'weir.channel-state';

/**
 * One batch of in-flight records of one input channel, in the channel state file of a subtask
 * (version 1). The file is an operator state snapshot (docs: OperatorStateBackend) holding the
 * list {@link CHANNEL_STATE_LIST} of these entries, in the order the records arrived; a channel's
 * entries are in its own order.
 */
export interface ChannelStateEntry {
  v: 1;
  /** The channel: its index among the task's input channels (the order the execution plan lists them). */
  channel: number;
  /** How many input channels the task had: a restore into another layout is refused. */
  channels: number;
  /** Which input of the head operator the channel feeds (0, or 1 for a two-input operator's second). */
  input: number;
  /** The batch's records, v8-serialized when they were taken (the task still processes the originals). */
  records: Uint8Array;
  /** Each record's event time, when they had one. */
  timestamps?: number[];
}

/**
 * Gathers the channel state of one unaligned checkpoint at one task (Flink's ChannelStateWriter,
 * input side): each batch of records the barrier overtook, serialized at once, so what the task
 * does with the records afterwards cannot change what was taken. Work per batch, never per record.
 */
export class ChannelStateWriter {
  readonly checkpointId: number;
  readonly #channels: number;
  readonly #entries: ChannelStateEntry[] = [];
  #records = 0;

  constructor(checkpointId: number, channels: number) {
    this.checkpointId = checkpointId;
    this.#channels = channels;
  }

  /** Records taken so far. */
  get recordCount(): number {
    return this.#records;
  }

  add(channel: number, input: number, records: readonly unknown[], timestamps: readonly number[] | undefined): void {
    if (records.length === 0) return;
    const entry: ChannelStateEntry = {
      v: CHANNEL_STATE_VERSION,
      channel,
      channels: this.#channels,
      input,
      records: serializeStateValue(records, `the records in flight on input channel ${channel}`),
    };
    if (timestamps !== undefined) entry.timestamps = timestamps.slice();
    this.#entries.push(entry);
    this.#records += records.length;
  }

  /** The channel state file's bytes; undefined when no record was in flight (no file). */
  finish(): Uint8Array | undefined {
    if (this.#entries.length === 0) return undefined;
    const backend = new OperatorStateBackend();
    backend.getListState<ChannelStateEntry>(CHANNEL_STATE_LIST).update(this.#entries);
    return backend.snapshot();
  }
}
