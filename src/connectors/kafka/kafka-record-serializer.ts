import type { MessageRecord } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import type { KafkaProducerRecord, KafkaSinkOptions } from './kafka-sink-options.ts';
import { murmur2 } from './murmur2.ts';

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
  /**
   * String keys seen lately, per topic, with their bytes and murmur2 partition: a job's keys
   * repeat, and the encoder only reads a key's bytes, so records of one key share them. At most
   * KEY_CACHE_SIZE keys per topic; then it starts again.
   */
  readonly #keys = new Map<string, Map<string, { key: Buffer; partition: number }>>();

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
      let key: Buffer | null;
      let partition = record.partition;
      const cached =
        typeof record.key === 'string' && partition === undefined && this.#options.partitioner === undefined
          ? this.#keys.get(topic)?.get(record.key)
          : undefined;
      if (cached !== undefined) {
        key = cached.key;
        partition = cached.partition;
      } else {
        key = toBuffer(record.key);
        if (partition === undefined) {
          let count = this.#partitionCounts.get(topic);
          if (count === undefined) {
            count = (await this.#connections.topic(topic)).partitions.length;
            this.#partitionCounts.set(topic, count);
          }
          if (this.#options.partitioner) partition = this.#options.partitioner(key, count);
          else if (key === null) partition = this.#roundRobin++ % count;
          else {
            partition = (murmur2(key) & 0x7fffffff) % count;
            if (typeof record.key === 'string') this.#remember(topic, record.key, key, partition);
          }
        }
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

  #remember(topic: string, text: string, key: Buffer, partition: number): void {
    let keys = this.#keys.get(topic);
    if (keys === undefined) {
      keys = new Map();
      this.#keys.set(topic, keys);
    } else if (keys.size >= KEY_CACHE_SIZE) keys.clear();
    keys.set(text, { key, partition });
  }
}

const KEY_CACHE_SIZE = 10_000;

function toBuffer(value: string | Buffer | null | undefined): Buffer | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? Buffer.from(value) : value;
}
