import type { TaskTransaction } from '../../core/connector/task-transaction.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { DeadLetterRecord } from '../../core/functions/dead-letter.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import { deadLetterToKafka } from './dead-letter-to-kafka.ts';
import { formatBootstrap } from './kafka-connection-options.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { KafkaRecordSerializer } from './kafka-record-serializer.ts';
import type { KafkaSinkOptions } from './kafka-sink-options.ts';
import { sinkConnections } from './sink-connections.ts';

/**
 * The Kafka sink in cluster mode: its records, serialized as the sink's serializer says (and its
 * dead letters, on the second input), go into the transaction of the task it runs in, which the
 * task's checkpoint commits. The sink's brokers must be the cluster's: a transaction lives on one
 * Kafka cluster.
 */
export class TaskKafkaWriter<T> extends StreamOperator<T, never> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #transaction: TaskTransaction;
  readonly #retryTimeoutMs: number;
  #connections: ClusterConnections | undefined;
  #serializer!: KafkaRecordSerializer<T>;

  constructor(options: KafkaSinkOptions<T>, transaction: TaskTransaction, retryTimeoutMs: number) {
    super();
    this.#options = options;
    this.#transaction = transaction;
    this.#retryTimeoutMs = retryTimeoutMs;
  }

  override open(context: OperatorContext): void {
    const own = formatBootstrap(resolveKafkaConnection(this.#options, 'kafkaSink').bootstrap);
    if (own !== this.#transaction.bootstrap) {
      throw new WeirError(
        'INVALID_CONFIG',
        `kafka sink "${context.uid}" writes to ${own}, but the cluster's transactions run on ${this.#transaction.bootstrap}: in cluster mode a sink writes in its task's transaction, on the cluster's brokers`,
        { hint: 'leave the sink’s bootstrap unset (it then uses the cluster’s), or run the job without --cluster' },
      );
    }
    this.#connections = sinkConnections(this.#options, context, this.#retryTimeoutMs);
    this.#serializer = new KafkaRecordSerializer(this.#options, this.#connections);
  }

  override async processBatch(batch: T[]): Promise<never[]> {
    this.#transaction.write(await this.#serializer.serialize(batch));
    return [];
  }

  /** Dead letters joined into the sink (its second input), each to its own topic. */
  override async processBatch2(letters: unknown[]): Promise<never[]> {
    this.#transaction.write(await this.#serializer.serializeWith(letters as DeadLetterRecord[], deadLetterToKafka));
    return [];
  }

  override async close(): Promise<void> {
    await this.#connections?.close();
  }
}
