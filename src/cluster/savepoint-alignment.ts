import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import type { InputOffset } from '../connectors/kafka/transaction-driver.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import type { BarrierAt, ChannelMark, ChannelSkip } from './exchange-input.ts';

/** The offset of a channel that ended before an alignment began (it bounds nothing: see SavepointAlignment). */
export const ENDED_BEFORE = -1n;

/** One exchange partition a task reads, and its channels (one per upstream task). */
export interface InputPartitionLayout {
  topic: string;
  partition: number;
  firstChannel: number;
  channels: number;
}

/** The layout of a task's input partitions, each with its channels from `firstChannel` up to the next's (`channels` in all). */
export function inputLayout(partitions: readonly { topic: string; partition: number; firstChannel: number }[], channels: number): InputPartitionLayout[] {
  return partitions.map(({ topic, partition, firstChannel }, index) => ({
    topic,
    partition,
    firstChannel,
    channels: (partitions[index + 1]?.firstChannel ?? channels) - firstChannel,
  }));
}

/**
 * A task behind exchanges aligning on a savepoint's barrier frames (Flink's aligned
 * CheckpointBarrierHandler, across Kafka): each upstream task wrote barrier S into the partition,
 * after everything it wrote before its own part of S; once every channel's barrier is read, the
 * task's state holds exactly what came before them, and it takes its part (checkpoint
 * `checkpointId`). Several upstream tasks share one partition, so one offset cannot say where
 * that state ends: the checkpoint resumes each partition at its earliest channel's barrier and
 * reads past the frames of the other channels below their own barrier (`skips`).
 *
 * A channel whose upstream task ended (bounded input) writes no barrier: its end frame counts as
 * one (Flink's FLIP-147, where EndOfPartition aligns as a barrier), at its offset when it is read
 * during the alignment, and at no offset ({@link ENDED_BEFORE}) when it was read before the
 * alignment began: then every frame of that channel lies below every barrier still to come in its
 * partition, so it bounds neither the partition's position nor any skip.
 */
export class SavepointAlignment {
  readonly barrier: SavepointBarrier;
  readonly checkpointId: number;
  readonly location: CheckpointLocation;
  readonly #layout: readonly InputPartitionLayout[];
  readonly #channels: number;
  readonly #at = new Map<number, BarrierAt>();

  constructor(barrier: SavepointBarrier, checkpointId: number, location: CheckpointLocation, layout: readonly InputPartitionLayout[]) {
    this.barrier = barrier;
    this.checkpointId = checkpointId;
    this.location = location;
    this.#layout = layout;
    this.#channels = layout.reduce((sum, entry) => sum + entry.channels, 0);
  }

  /** A channel's barrier was read; false when that channel's came already. */
  add(at: BarrierAt): boolean {
    if (this.#at.has(at.channel)) return false;
    this.#at.set(at.channel, at);
    return true;
  }

  /** Every channel's barrier was read. */
  get complete(): boolean {
    return this.#at.size === this.#channels;
  }

  /**
   * Per partition, the offset after its earliest channel's barrier; a partition all of whose
   * channels ended before the alignment, where it was read to (`read`: everything read is in the state).
   */
  positions(read: readonly InputOffset[]): InputOffset[] {
    return this.#layout.map(({ topic, partition, firstChannel, channels }) => {
      let offset: bigint | undefined;
      for (let channel = firstChannel; channel < firstChannel + channels; channel++) {
        const at = this.#at.get(channel);
        if (at?.offset === ENDED_BEFORE) continue;
        const next = at === undefined ? 0n : at.offset + 1n;
        if (offset === undefined || next < offset) offset = next;
      }
      offset ??= read.find((entry) => entry.topic === topic && entry.partition === partition)?.offset ?? 0n;
      return { topic, partition, offset };
    });
  }

  /** The channels whose barrier lies past their partition's position: their frames below it are in the state. */
  skips(positions: readonly InputOffset[]): ChannelSkip[] {
    return [...this.#at.values()].flatMap((at) => {
      if (at.offset === ENDED_BEFORE) return [];
      const position = positions.find((entry) => entry.topic === at.topic && entry.partition === at.partition)?.offset ?? 0n;
      return at.offset + 1n > position ? [{ topic: at.topic, partition: at.partition, channel: at.channel, below: at.offset + 1n }] : [];
    });
  }

  /** What each channel's latest watermark frame said before its barrier. */
  marks(): ChannelMark[] {
    return [...this.#at.values()].flatMap((at) => (at.mark === undefined ? [] : [at.mark]));
  }
}

/** Skips of both lists, one per channel: the one that reads past more (the larger `below`). */
export function mergeSkips(a: readonly ChannelSkip[], b: readonly ChannelSkip[]): ChannelSkip[] {
  const byChannel = new Map<number, ChannelSkip>();
  for (const skip of [...a, ...b]) {
    const kept = byChannel.get(skip.channel);
    if (kept === undefined || skip.below > kept.below) byChannel.set(skip.channel, skip);
  }
  return [...byChannel.values()];
}
