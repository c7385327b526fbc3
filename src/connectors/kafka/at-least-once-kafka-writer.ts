import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { StreamOperator } from '../../core/operator/stream-operator.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import { KafkaRecordSerializer } from './kafka-record-serializer.ts';
import { DEFAULT_RETRY_TIMEOUT_MS, type KafkaSinkOptions } from './kafka-sink-options.ts';
import { PlainProducer } from './plain-producer.ts';
import { sinkConnections } from './sink-connections.ts';

/**
 * The Kafka sink's operator for `at-least-once`: each batch is acknowledged by every in-sync
 * replica before the next is taken, so nothing before a barrier can be lost. `none`: the same
 * without waiting.
 */
export class AtLeastOnceKafkaWriter<T> extends StreamOperator<T, never> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #retryTimeoutMs: number;
  #connections!: ClusterConnections;
  #serializer!: KafkaRecordSerializer<T>;
  #producer!: PlainProducer;
  #pending: Promise<unknown>[] = [];

  constructor(options: KafkaSinkOptions<T>, retryTimeoutMs = DEFAULT_RETRY_TIMEOUT_MS) {
    super();
    this.#options = options;
    this.#retryTimeoutMs = retryTimeoutMs;
  }

  override open(context: OperatorContext): void {
    this.#connections = sinkConnections(this.#options, context, this.#retryTimeoutMs);
    this.#serializer = new KafkaRecordSerializer(this.#options, this.#connections);
    this.#producer = new PlainProducer(this.#connections, { retryTimeoutMs: this.#retryTimeoutMs });
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
