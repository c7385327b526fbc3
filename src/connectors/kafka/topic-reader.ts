import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import { ClusterConnections } from './cluster-connections.ts';
import type { BrokerAddress } from './kafka-connection-options.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { EARLIEST_OFFSET, fetchedRecords, fetchPartitions, type IsolationLevel, LATEST_OFFSET, listOffsets, type TopicRecord } from './partition-fetcher.ts';

export type { IsolationLevel, TopicRecord } from './partition-fetcher.ts';

export interface ReadTopicOptions {
  /**
   * The brokers (`host:port` text or addresses); default: the Kafka settings of the environment
   * (KAFKA_BROKERS, WEIR_KAFKA_CONFIG's bootstrap.servers) or of the command that runs this.
   */
  bootstrap?: string | readonly string[] | readonly BrokerAddress[] | undefined;
  /** TLS and SASL (@platformatic/kafka's ConnectionOptions); default: those same settings (`loadKafkaSettings`). */
  connection?: ConnectionOptions | undefined;
  topic: string;
  /** read_committed (the default) sees only committed transactional records. */
  isolation?: IsolationLevel;
  /** Give up (with an error) when the end is not reached in this time. */
  timeoutMs?: number;
  /**
   * Where to stop: the high watermark at the start (the default; read_committed then waits for the
   * transactions open at that moment), or the last stable offset at the start (what a
   * read_committed reader can see right now, without waiting).
   */
  until?: 'high-watermark' | 'last-stable-offset';
}

/**
 * Reads a whole topic, from the earliest offset up to the high watermarks it has when the read
 * starts. Read_committed waits for the transactions open at that moment to end (Kafka writes commit
 * markers after EndTxn returns, so even a transaction just committed may not be readable yet), and
 * fails naming the partition when its last stable offset stays behind: a hanging transaction. This
 * is the reader Weir's own audits trust: it filters aborted transactions itself at the protocol
 * level instead of relying on a client library's consumer.
 */
export async function readTopic(options: ReadTopicOptions): Promise<TopicRecord[]> {
  const isolation = options.isolation ?? 'read_committed';
  const kafka = resolveKafkaConnection(options, 'readTopic');
  const connections = new ClusterConnections(kafka.bootstrap, { clientId: 'weir-reader', ...kafka.connection });
  try {
    const topic = await connections.topic(options.topic);
    const topics = new Map([[topic.name, topic]]);
    const positions = await listOffsets(connections, topic, topic.partitions, isolation, EARLIEST_OFFSET);
    const ends = await listOffsets(
      connections,
      topic,
      topic.partitions,
      options.until === 'last-stable-offset' ? isolation : 'read_uncommitted',
      LATEST_OFFSET,
    );
    const stableOffsets = new Map<number, bigint>();
    const records: TopicRecord[][] = topic.partitions.map(() => []);
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);

    const unfinished = () => topic.partitions.filter((info) => (positions.get(info.partition) as bigint) < (ends.get(info.partition) as bigint));
    for (let todo = unfinished(); todo.length > 0; todo = unfinished()) {
      if (Date.now() > deadline) {
        const lagging = todo
          .map(
            (info) =>
              `partition ${info.partition} at ${positions.get(info.partition)} of ${ends.get(info.partition)}, last stable offset ${stableOffsets.get(info.partition) ?? '?'}`,
          )
          .join('; ');
        throw new WeirError('READ_TIMEOUT', `reading topic "${options.topic}" ${isolation} did not reach its end in time (${lagging})`, {
          hint: 'a last stable offset below the end means an open transaction (perhaps a hanging one) holds read_committed readers back',
          fault: 'external',
          retriable: true,
        });
      }
      const results = await fetchPartitions(
        connections,
        topics,
        todo.map((info) => ({ topic: topic.name, partition: info.partition, offset: positions.get(info.partition) as bigint })),
        { isolation, maxWaitMs: 100 },
      );
      let progressed = false;
      for (const result of results) {
        stableOffsets.set(result.partition, result.lastStableOffset);
        const end = ends.get(result.partition) as bigint;
        const out = records[topic.partitions.findIndex((info) => info.partition === result.partition)] as TopicRecord[];
        for (const record of fetchedRecords(result)) if (record.offset < end) out.push(record);
        if (result.nextOffset > (positions.get(result.partition) as bigint)) {
          positions.set(result.partition, result.nextOffset);
          progressed = true;
        }
      }
      if (!progressed) await sleep(50);
    }
    return records.flat();
  } finally {
    await connections.close();
  }
}
