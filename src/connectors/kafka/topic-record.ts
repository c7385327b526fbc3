/** A record as a Kafka source, a topic reader or an audit reads it: where it is, its bytes and its batch's producer. */
export interface TopicRecord {
  topic: string;
  partition: number;
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: [Buffer | null, Buffer | null][];
  /** The producer id of the record's batch (-1 for a producer without one): the transactional id that wrote it, in audits. */
  producerId: bigint;
}
