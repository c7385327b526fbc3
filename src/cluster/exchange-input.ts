import type { ConnectionOptions } from '@platformatic/kafka';
import { type BrokerAddress, formatBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import { kafkaSource } from '../connectors/kafka/kafka-source.ts';
import type { KafkaSplit } from '../connectors/kafka/kafka-split.ts';
import type { TopicRecord } from '../connectors/kafka/partition-fetcher.ts';
import type { InputOffset } from '../connectors/kafka/transaction-driver.ts';
import type { SourceReader } from '../core/connector/source.ts';
import type { ChannelMessage } from '../runtime/io/channel-message.ts';
import { decodeFrame, type SavepointBarrier } from './exchange-frames.ts';

/** Batches delivered to the task and not yet through its chain, past which the input waits. */
const MAX_IN_FLIGHT = 8;
const POLL_RECORDS = 256;

/** What an upstream task's latest watermark frame said on a channel, and whether its end frame came. */
export interface ChannelMark {
  channel: number;
  watermark: number;
  idle: boolean;
  /** The upstream task's input ended: its end frame came (a restore gives it back, as it is behind the offsets). */
  ended?: boolean;
}

/** Frames of `channel` in its partition below offset `below` are in the task's restored state: they are read past (a savepoint's alignment left them behind the offset). */
export interface ChannelSkip {
  topic: string;
  partition: number;
  channel: number;
  below: bigint;
}

/** Where a savepoint's barrier frame was read: its channel, its partition's offset, and the channel's watermark mark then. */
export interface BarrierAt {
  channel: number;
  topic: string;
  partition: number;
  offset: bigint;
  mark: ChannelMark | undefined;
}

/** One exchange topic a task reads: its partition is the task's number; its upstream tasks are channels from `firstChannel` on. */
export interface ExchangeInputPartition {
  topic: string;
  partition: number;
  firstChannel: number;
  /** A forward exchange: one writer (the upstream task of the same number), one channel. */
  forward?: boolean;
  /** The offset to go on from (a restored checkpoint's); undefined: the partition's start. */
  offset: bigint | undefined;
}

/**
 * The input of a task downstream of exchanges (in place of its channels from other subtasks):
 * each exchange topic's partition of the task, read read_committed (only what the upstream
 * tasks' checkpoints committed), its frames turned into channel messages, one channel per
 * upstream task, so the task's barrier handler and watermark valve work as in one process.
 * Reading waits while the task has {@link MAX_IN_FLIGHT} batches it has not run yet; batches of a
 * channel blocked by a savepoint's barrier (the task holds them until every channel's barrier came)
 * do not count until the alignment is done, else they could hold back the other channels' barriers
 * behind them in the same partition.
 */
export class ExchangeInput {
  readonly #reader: SourceReader<TopicRecord, KafkaSplit>;
  readonly #partitions: readonly ExchangeInputPartition[];
  readonly #deliver: (message: ChannelMessage) => void;
  readonly #onFailure: (error: unknown) => void;
  /** Per channel, what its latest watermark frame said: in the task's checkpoint, given back on restore. */
  readonly #marks = new Map<number, ChannelMark>();
  /** Per channel, the offset below which its frames are read past (a restored savepoint alignment's). */
  readonly #skips = new Map<number, ChannelSkip>();
  readonly #onBarrier: ((barrier: SavepointBarrier, at: BarrierAt) => boolean) | undefined;
  readonly #onEnd: ((at: BarrierAt) => void) | undefined;
  /** Channels whose savepoint barrier the task holds them behind. */
  readonly #blocked = new Set<number>();
  /** Batches delivered to blocked channels (counted once the alignment is done). */
  #held = 0;
  #inFlight = 0;
  #stopped = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: {
    bootstrap: readonly BrokerAddress[];
    connection: ConnectionOptions;
    partitions: readonly ExchangeInputPartition[];
    task: number;
    taskCount: number;
    deliver: (message: ChannelMessage) => void;
    onFailure: (error: unknown) => void;
    /** The channels' marks of the restored checkpoint. */
    marks?: readonly ChannelMark[];
    /** The restored checkpoint's channel skips. */
    skips?: readonly ChannelSkip[];
    /** A savepoint's barrier frame was read: true when the task took it (the channel is then blocked until {@link alignmentDone}). */
    onBarrier?: (barrier: SavepointBarrier, at: BarrierAt) => boolean;
    /** A channel's end frame was read (after its end-of-data was delivered): a savepoint aligning counts it as that channel's barrier. */
    onEnd?: (at: BarrierAt) => void;
  }) {
    for (const mark of options.marks ?? []) this.#marks.set(mark.channel, mark);
    for (const skip of options.skips ?? []) this.#skips.set(skip.channel, skip);
    this.#onBarrier = options.onBarrier;
    this.#onEnd = options.onEnd;
    this.#partitions = options.partitions;
    this.#deliver = options.deliver;
    this.#onFailure = options.onFailure;
    const source = kafkaSource<TopicRecord>({
      bootstrap: formatBootstrap(options.bootstrap),
      connection: options.connection,
      topics: [...new Set(options.partitions.map((entry) => entry.topic))],
      deserializer: (record) => record,
      partitionDiscoveryInterval: 0,
    });
    this.#reader = source.createReader({ subtaskIndex: options.task, parallelism: options.taskCount, attemptNumber: 0 });
  }

  async open(): Promise<void> {
    const splits: KafkaSplit[] = this.#partitions.map((entry) => ({ topic: entry.topic, partition: entry.partition, offset: entry.offset ?? null, end: null }));
    await this.#reader.open(splits, splits);
    // An upstream task that is idle writes no frames, so what its channel last said comes from the
    // checkpoint: else the restored task would wait for it (held at its watermark) for ever.
    for (const mark of this.#marks.values()) this.#deliverMark(mark);
    this.#loop = this.#run().catch((error: unknown) => {
      if (!this.#stopped) this.#onFailure(error);
    });
  }

  /** A batch went through the task's chain (its credit came back). */
  returnCredit(): void {
    this.#inFlight--;
    this.#wake?.();
  }

  /** The next offset of each partition: what a checkpoint taken now has consumed. */
  positions(checkpointId: number): InputOffset[] {
    return (this.#reader.snapshotState(checkpointId) as KafkaSplit[]).map((split) => ({
      topic: split.topic,
      partition: split.partition,
      offset: split.offset ?? 0n,
    }));
  }

  /** The skips still ahead of these positions (a checkpoint at them keeps them). */
  skipsAfter(positions: readonly InputOffset[]): ChannelSkip[] {
    return [...this.#skips.values()].filter((skip) => {
      const position = positions.find((entry) => entry.topic === skip.topic && entry.partition === skip.partition)?.offset ?? 0n;
      return skip.below > position;
    });
  }

  /** Every channel's savepoint barrier came: the blocked channels' batches count again. */
  alignmentDone(): void {
    this.#inFlight += this.#held;
    this.#held = 0;
    this.#blocked.clear();
  }

  /** The channels whose end frame came (read now, or before the restored checkpoint), with what they last said. */
  endedChannels(): ChannelMark[] {
    return [...this.#marks.values()].filter((mark) => mark.ended === true).map((mark) => ({ ...mark }));
  }

  /** What every channel's latest watermark frame said (read before the barrier it goes with). */
  marks(): ChannelMark[] {
    return [...this.#marks.values()].map((mark) => ({ ...mark }));
  }

  #deliverMark(mark: ChannelMark): void {
    const { channel } = mark;
    if (mark.idle) this.#deliver({ kind: 'watermark-status', channel, idle: true });
    else {
      this.#deliver({ kind: 'watermark-status', channel, idle: false });
      if (mark.watermark > Number.NEGATIVE_INFINITY) this.#deliver({ kind: 'watermark', channel, watermark: mark.watermark });
    }
    if (mark.ended === true) this.#deliver({ kind: 'end-of-data', channel });
  }

  async close(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    await this.#reader.close();
  }

  async #run(): Promise<void> {
    // A forward exchange's frames all come from one upstream task: its one channel.
    const channelOf = new Map(this.#partitions.map((entry) => [entry.topic, entry]));
    while (!this.#stopped) {
      if (this.#inFlight >= MAX_IN_FLIGHT) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      const records = (await this.#reader.pollNext(POLL_RECORDS)) ?? [];
      if (this.#stopped) return;
      for (const record of records) {
        const frame = decodeFrame(record);
        const entry = channelOf.get(record.topic) as ExchangeInputPartition;
        const channel = entry.firstChannel + (entry.forward === true ? 0 : frame.from);
        if (this.#skips.size > 0) {
          const skip = this.#skips.get(channel);
          if (skip !== undefined && record.offset < skip.below) continue;
        }
        if (frame.kind === 'records') {
          // A channel that ended is in the state whole: frames of it read again after a restore below its end frame are passed.
          if (this.#marks.get(channel)?.ended === true) continue;
          if (this.#blocked.has(channel)) this.#held++;
          else this.#inFlight++;
          this.#deliver(
            frame.timestamps === undefined
              ? { kind: 'records', channel, records: frame.records }
              : { kind: 'records', channel, records: frame.records, timestamps: frame.timestamps },
          );
        } else if (frame.kind === 'barrier') {
          const mark = this.#marks.get(channel);
          const at = { channel, topic: record.topic, partition: record.partition, offset: record.offset, mark: mark === undefined ? undefined : { ...mark } };
          if (this.#onBarrier?.(frame, at) === true) this.#blocked.add(channel);
        } else if (frame.kind === 'end') {
          // Once per channel: a task restored from a checkpoint before its upstream's end reads that end again.
          const mark = this.#marks.get(channel) ?? { channel, watermark: Number.NEGATIVE_INFINITY, idle: false };
          if (mark.ended === true) continue;
          const ended = { ...mark, ended: true };
          this.#marks.set(channel, ended);
          this.#deliver({ kind: 'end-of-data', channel });
          this.#onEnd?.({ channel, topic: record.topic, partition: record.partition, offset: record.offset, mark: { ...ended } });
        } else if (this.#marks.get(channel)?.ended !== true) {
          const mark = { channel, watermark: frame.watermark, idle: frame.idle };
          this.#marks.set(channel, mark);
          this.#deliverMark(mark);
        }
      }
    }
  }
}
