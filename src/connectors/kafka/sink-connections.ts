import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { ClusterConnections } from './cluster-connections.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import type { KafkaSinkOptions } from './kafka-sink-options.ts';

/**
 * The connections of a Kafka sink's subtask: its bootstrap and connection (or the command's
 * defaults), retried while brokers are unreachable for `retryTimeoutMs`, reported as this subtask's.
 */
export function sinkConnections<T>(options: KafkaSinkOptions<T>, context: OperatorContext, retryTimeoutMs: number): ClusterConnections {
  const kafka = resolveKafkaConnection(options, 'kafkaSink');
  return new ClusterConnections(kafka.bootstrap, {
    clientId: 'weir-sink',
    ...kafka.connection,
    retryTimeoutMs,
    owner: `the kafka sink "${context.uid}" (subtask ${context.subtaskIndex})`,
  });
}
