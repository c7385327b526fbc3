import { type MessageRecord, murmur2 } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import type { KafkaProducerRecord, KafkaSinkOptions } from './kafka-sink-options.ts';

/**
 * Turns the job's records into partitioned Kafka messages with the sink's serializer (shared by
 * every delivery guarantee): the topic defaults to the sink's, the partition to the partitioner's
 * choice (murmur2 of the key as Kafka's Java client, round-robin without a key).
 */
export class KafkaRecordSerializer<T> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #connections: ClusterConnections;
  readonly #partitionCounts = new Map<string, number>();
  #roundRobin = 0;

  constructor(options: KafkaSinkOptions<T>, connections: ClusterConnections) {
    this.#options = options;
    this.#connections = connections;
  }

  serialize(batch: T[]): Promise<MessageRecord[]> {
    return this.serializeWith(batch, this.#options.serializer);
  }

  /** The same for records of another kind (dead letters), turned into Kafka records by `serializer`. */
  async serializeWith<R>(batch: R[], serializer: (record: R) => KafkaProducerRecord): Promise<MessageRecord[]> {
    const out: MessageRecord[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const record = serializer(batch[i] as R);
      const topic = record.topic ?? this.#options.topic;
      if (topic === undefined) {
        throw new WeirError('INVALID_SINK', 'a record has no topic: the serializer named none and the sink has no default topic', {
          hint: 'set kafkaSink({ topic }) or return a topic from the serializer',
        });
      }
      const key = toBuffer(record.key);
      let partition = record.partition;
      if (partition === undefined) {
        let count = this.#partitionCounts.get(topic);
        if (count === undefined) {
          count = (await this.#connections.topic(topic)).partitions.length;
          this.#partitionCounts.set(topic, count);
        }
        partition = this.#options.partitioner
          ? this.#options.partitioner(key, count)
          : key === null
            ? this.#roundRobin++ % count
            : (murmur2(key) & 0x7fffffff) % count;
      }
      const message: MessageRecord = { topic, partition, value: toBuffer(record.value) as Buffer };
      if (key !== null) message.key = key;
      if (record.timestamp !== undefined) message.timestamp = BigInt(record.timestamp);
      if (record.headers !== undefined)
        message.headers = new Map(Object.entries(record.headers).map(([name, value]) => [Buffer.from(name), toBuffer(value) as Buffer]));
      out[i] = message;
    }
    return out;
  }
}

function toBuffer(value: string | Buffer | null | undefined): Buffer | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? Buffer.from(value) : value;
}
