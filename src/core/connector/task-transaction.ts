/**
 * Cluster mode's side of a sink: the Kafka transaction of the task the sink's operator runs in.
 * What a sink writes here becomes visible when the task's checkpoint commits, in the same
 * transaction as the task's input offsets and checkpoint record (docs/scale-out.md), so a sink
 * of cluster mode needs no two-phase commit of its own.
 */

/** One Kafka record as a task's transaction takes it (the fields of @platformatic/kafka's MessageRecord). */
export interface TaskRecord {
  topic: string;
  /** Always set by the Kafka sink's serializer. */
  partition?: number;
  key?: Buffer;
  value?: Buffer;
  timestamp?: bigint;
  headers?: Map<Buffer, Buffer>;
}

export interface TaskTransaction {
  /** The brokers the task's transactions run on ("host:port,..."): a sink on other brokers cannot join them. */
  readonly bootstrap: string;
  /** Adds records to the task's open transaction (sent in batches; committed with the task's next checkpoint). */
  write(records: TaskRecord[]): void;
}
