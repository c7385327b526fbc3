/** A Kafka source's split: one topic partition and the next offset to read (Flink's KafkaPartitionSplit). */
export interface KafkaSplit {
  topic: string;
  partition: number;
  /** null until resolved from the starting offsets by the subtask that owns it. */
  offset: bigint | null;
  /** Bounded mode: where the partition ends (exclusive); null: unbounded; undefined: not resolved yet. */
  end: bigint | null | undefined;
}
