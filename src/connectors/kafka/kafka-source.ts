import type { Preflightable, PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import type { Source } from '../../core/connector/source.ts';
import { ClusterConnections } from './cluster-connections.ts';
import { deadLetterRoute } from './dead-letter-sink.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { missingTopics, unreachableFinding } from './kafka-preflight.ts';
import { type KafkaSourceOptions, parseKafkaSourceOptions } from './kafka-source-options.ts';
import { KafkaSourceReader } from './kafka-source-reader.ts';
import type { KafkaSplit } from './kafka-split.ts';
import { subscribedTopics } from './subscribed-topics.ts';

/**
 * Kafka source (Flink's KafkaSource): topic partitions are the splits, spread over the source's
 * subtasks; the next offset of each is checkpointed state, so after a failure the source rewinds
 * to it and reads again. Reads read_committed by default, with Weir's own aborted-transaction
 * filtering. Partitions added later (and, with a pattern, new topics) are found by partition
 * discovery. The options are validated here, once: a bad one fails when the job is built.
 */
export function kafkaSource<T>(sourceOptions: KafkaSourceOptions<T>): Source<T, KafkaSplit> & Preflightable {
  const options = parseKafkaSourceOptions(sourceOptions);
  const discoveryMs = options.bounded ? 0 : options.partitionDiscoveryInterval;
  return {
    name: `kafka source (${Array.isArray(options.topics) ? options.topics.join(', ') : String(options.topics)})`,
    bounded: options.bounded,
    async createInitialSplits() {
      const kafka = resolveKafkaConnection(options, 'kafkaSource');
      const connections = new ClusterConnections(kafka.bootstrap, { clientId: 'weir-source', ...kafka.connection });
      try {
        const splits: KafkaSplit[] = [];
        for (const info of await subscribedTopics(connections, options.topics)) {
          for (const partition of info.partitions)
            splits.push({ topic: info.name, partition: partition.partition, offset: null, end: options.bounded ? undefined : null });
        }
        return splits;
      } finally {
        await connections.close();
      }
    },
    createReader: (context) => new KafkaSourceReader(options, context, context.discoversSplits === false ? 0 : discoveryMs),
    // Per-partition watermarks, as Flink's KafkaSource: each partition is a split with its own generator.
    splitId: (split) => `${split.topic}:${split.partition}`,
    // Reinterpreted as keyed: partition p holds key group p (written with keyGroupPartitioner).
    keyGroupOfSplit: (split) => split.partition,
    deadLetters:
      typeof options.onDeserializationError === 'object'
        ? deadLetterRoute(options.onDeserializationError.deadLetter, { bootstrap: options.bootstrap, connection: options.connection })
        : undefined,
    async preflight(context: PreflightContext): Promise<PreflightFinding[]> {
      const where = `kafka source "${context.uid}"`;
      try {
        const kafka = resolveKafkaConnection(options, 'kafkaSource');
        const findings: PreflightFinding[] = (Array.isArray(options.topics) ? await missingTopics(kafka.bootstrap, options.topics, kafka.connection) : []).map(
          (topic) => ({
            level: 'error',
            where,
            message: `${where}: topic "${topic}" does not exist`,
            hint: 'create the topic first, or check its name',
          }),
        );
        if (context.exactlyOnce && options.isolation === 'read_uncommitted') {
          findings.push({
            level: 'warning',
            where,
            message: `${where} reads read_uncommitted in an exactly-once job: it will see records of aborted and still open transactions`,
            hint: "leave isolation at its default, 'read_committed'",
          });
        }
        return findings;
      } catch (error) {
        return [unreachableFinding(where, error)];
      }
    },
  };
}
