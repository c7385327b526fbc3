import type { OperatorMetricGroup } from '../metrics/metric-group.ts';
import type { DeadLetterRoute } from './dead-letter-route.ts';

/**
 * A source (Flink's FLIP-27 Source, simplified): a unit of work is a split, and the splits a
 * subtask reads, with its position in each, are the source's checkpointed state. On restore the
 * splits are redistributed over the new parallelism.
 */
export interface Source<T, Split = unknown> {
  readonly name: string;
  /** Bounded sources end; the job then takes a final checkpoint and finishes. */
  readonly bounded: boolean;
  /**
   * The splits of a fresh start; split i goes to subtask i % parallelism. Every subtask asks, so
   * the answer must be the same list in the same order each time.
   */
  createInitialSplits(parallelism: number): Split[] | Promise<Split[]>;
  createReader(context: SourceReaderContext): SourceReader<T, Split>;
  /**
   * A split's stable name (Flink's SourceSplit.splitId(), e.g. "topic:3"). A source that has it
   * gets watermarks per split: its reader names the split of each record in a {@link SourceBatch}
   * when {@link SourceReaderContext.tracksSplits} is set, each split gets its own watermark
   * generator, and the subtask emits their minimum (idle splits left out), as Flink's sources do.
   */
  splitId?(split: Split): string;
  /**
   * The key group a split holds, for a stream reinterpreted as keyed (reinterpretAsKeyedStream):
   * the split goes to the subtask that owns that key group (Kafka: partition p holds key group p).
   */
  keyGroupOfSplit?(split: Split): number;
  /**
   * Where the records the reader cannot read go (an error policy's dead-letter topic): the job's
   * graph connects the source's dead-letter side output there, and the reader emits them with
   * {@link SourceReaderContext.output} under DEAD_LETTER_TAG.
   */
  readonly deadLetters?: DeadLetterRoute | undefined;
}

export interface SourceReaderContext {
  /** The source's own metrics (records skipped, records lost to an out-of-range offset...), shown per operator. */
  readonly metrics?: OperatorMetricGroup;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  /**
   * The job makes watermarks per split for this source: name each record's split in
   * {@link SourceBatch.splitIds}. When false or unset, leave them out (they would be ignored).
   */
  readonly tracksSplits?: boolean;
  /**
   * False when the splits are fixed from outside (cluster mode: a task's split is its partition, by
   * the plan, and a task restores only its own state, so it cannot tell a new split from another
   * task's): the reader discovers none. Unset: it may.
   */
  readonly discoversSplits?: boolean;
  /** Emits a record on a side output of the source (its dead letters); false when no stream reads the tag. */
  readonly output?: (tag: string, record: unknown, timestamp: number) => boolean;
  /** The source's uid and name, for its dead letters and errors. */
  readonly uid?: string;
  readonly name?: string;
}

/** What {@link SourceReader.pollNextBatch} returns: the records, plus what the source knows of each (index by index). */
export interface SourceBatch<T> {
  readonly records: T[];
  /** The split of each record, by {@link Source.splitId}: for per-split watermarks. */
  readonly splitIds?: readonly string[];
  /** Each record's own timestamp from the source (Kafka's record timestamp), handed to the timestamp assigner. */
  readonly timestamps?: readonly number[];
  /** Splits that finished with this batch (Flink's releaseOutputForSplit): their watermarks no longer hold the others back. */
  readonly finishedSplitIds?: readonly string[];
}

export interface SourceReader<T, Split = unknown> {
  /**
   * Starts reading `splits`. `allSplits` are the splits of every subtask when the job (re)started,
   * so a reader that discovers new splits (new Kafka partitions) can tell them from known ones.
   */
  open(splits: Split[], allSplits: Split[]): void | Promise<void>;
  /** Up to `max` records: an empty array when none are ready now, null once every split is finished. */
  pollNext(max: number): T[] | null | Promise<T[] | null>;
  /**
   * Optional, for event time: like {@link pollNext}, naming each record's split (when
   * {@link SourceReaderContext.tracksSplits}) and its own timestamp. A job with a watermark
   * strategy on this source calls it instead of `pollNext`.
   */
  pollNextBatch?(max: number): SourceBatch<T> | null | Promise<SourceBatch<T> | null>;
  /**
   * Optional: why no checkpoint can be taken now, if none can (Flink's
   * CHECKPOINT_DECLINED_TASK_NOT_READY): the reader is in the middle of what a checkpoint cannot
   * hold, such as an initial snapshot read in one database snapshot. The checkpoint is then
   * declined (not counted toward checkpointing.tolerableFailures) and `snapshotState` not called.
   */
  checkpointNotReady?(): string | undefined;
  /** The splits with their current positions, taken as the barrier is emitted. */
  snapshotState(checkpointId: number): Split[];
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  close(): void | Promise<void>;
}
