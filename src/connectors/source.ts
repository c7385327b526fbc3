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
}

export interface SourceReaderContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
}

export interface SourceReader<T, Split = unknown> {
  /**
   * Starts reading `splits`. `allSplits` are the splits of every subtask when the job (re)started,
   * so a reader that discovers new splits (new Kafka partitions) can tell them from known ones.
   */
  open(splits: Split[], allSplits: Split[]): void | Promise<void>;
  /** Up to `max` records: an empty array when none are ready now, null once every split is finished. */
  pollNext(max: number): T[] | null | Promise<T[] | null>;
  /** The splits with their current positions, taken as the barrier is emitted. */
  snapshotState(checkpointId: number): Split[];
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  close(): void | Promise<void>;
}
