import { StreamOperator } from '../../core/operator/stream-operator.ts';
import { ClusterConnections } from './cluster-connections.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { KafkaRecordSerializer } from './kafka-record-serializer.ts';
import type { KafkaSinkOptions } from './kafka-sink-options.ts';
import { PlainProducer } from './plain-producer.ts';

/**
 * The Kafka sink's operator for `at-least-once`: each batch is acknowledged by every in-sync
 * replica before the next is taken, so nothing before a barrier can be lost. `none`: the same
 * without waiting.
 */
export class AtLeastOnceKafkaWriter<T> extends StreamOperator<T, never> {
  readonly #options: KafkaSinkOptions<T>;
  #connections!: ClusterConnections;
  #serializer!: KafkaRecordSerializer<T>;
  #producer!: PlainProducer;
  #pending: Promise<unknown>[] = [];

  constructor(options: KafkaSinkOptions<T>) {
    super();
    this.#options = options;
  }

  override open(): void {
    const kafka = resolveKafkaConnection(this.#options, 'kafkaSink');
    this.#connections = new ClusterConnections(kafka.bootstrap, { clientId: 'weir-sink', ...kafka.connection });
    this.#serializer = new KafkaRecordSerializer(this.#options, this.#connections);
    this.#producer = new PlainProducer(this.#connections);
  }

  async processBatch(batch: T[]): Promise<never[]> {
    const messages = await this.#serializer.serialize(batch);
    const sent = this.#producer.send(messages, this.#options.deliveryGuarantee === 'at-least-once' ? -1 : 1);
    if (this.#options.deliveryGuarantee === 'at-least-once') await sent;
    else this.#pending.push(sent.catch(() => {}));
    if (this.#pending.length > 64) this.#pending = this.#pending.slice(-64);
    return [];
  }

  override async close(): Promise<void> {
    await Promise.all(this.#pending);
    await this.#connections.close().catch(() => {});
  }
}
