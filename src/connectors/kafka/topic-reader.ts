import { setTimeout as sleep } from 'node:timers/promises';
import { fetchV17, listOffsetsV9 } from '@platformatic/kafka';
import { WeirError } from '../../errors.ts';
import { filterAbortedTransactions } from './aborted-transaction-filter.ts';
import type { BrokerAddress } from './bootstrap.ts';
import { ClusterConnections, type PartitionInfo } from './cluster-connections.ts';

export type IsolationLevel = 'read_committed' | 'read_uncommitted';

export interface TopicRecord {
  topic: string;
  partition: number;
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: [Buffer | null, Buffer | null][];
}

export interface ReadTopicOptions {
  bootstrap: readonly BrokerAddress[];
  topic: string;
  /** read_committed (the default) sees only committed transactional records. */
  isolation?: IsolationLevel;
  /** Give up (with an error) when the end is not reached in this time. */
  timeoutMs?: number;
}

const EARLIEST = -2n;
const LATEST = -1n;

/**
 * Reads a whole topic, from the earliest offset up to the high watermarks it has when the read
 * starts. Read_committed waits for the transactions open at that moment to end (Kafka writes commit
 * markers after EndTxn returns, so even a transaction just committed may not be readable yet), and
 * fails naming the partition when its last stable offset stays behind: a hanging transaction. This is the
 * reader Weir's own audits trust, so it filters aborted transactions itself at the protocol level
 * ({@link filterAbortedTransactions}) instead of relying on a client library's consumer.
 */
export async function readTopic(options: ReadTopicOptions): Promise<TopicRecord[]> {
  const isolation = options.isolation ?? 'read_committed';
  const isolationLevel = isolation === 'read_committed' ? 1 : 0;
  const connections = new ClusterConnections(options.bootstrap, { clientId: 'weir-reader' });
  try {
    const topic = await connections.topic(options.topic);
    const starts = await listOffsets(connections, options.topic, topic.partitions, isolationLevel, EARLIEST);
    const ends = await listOffsets(connections, options.topic, topic.partitions, 0, LATEST);
    const stableOffsets = new Map<number, bigint>();
    const positions = new Map(starts);
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
      let progressed = false;
      for (const [leaderId, partitions] of groupByLeader(todo)) {
        const response = await fetchV17.api.async(
          await connections.node(leaderId),
          100,
          1,
          16 * 1024 * 1024,
          isolationLevel,
          0,
          -1,
          [
            {
              topicId: topic.topicId,
              partitions: partitions.map((info) => ({
                partition: info.partition,
                currentLeaderEpoch: info.leaderEpoch,
                fetchOffset: positions.get(info.partition) as bigint,
                lastFetchedEpoch: -1,
                partitionMaxBytes: 4 * 1024 * 1024,
              })),
            },
          ],
          [],
          '',
        );
        for (const partition of response.responses.flatMap((entry) => entry.partitions)) {
          if (partition.errorCode !== 0) {
            throw new WeirError('FETCH_FAILED', `fetching ${options.topic}/${partition.partitionIndex} failed with Kafka error code ${partition.errorCode}`, {
              fault: 'external',
              retriable: true,
            });
          }
          stableOffsets.set(partition.partitionIndex, partition.lastStableOffset);
          const position = positions.get(partition.partitionIndex) as bigint;
          const end = ends.get(partition.partitionIndex) as bigint;
          const result = filterAbortedTransactions(partition.records ?? [], isolationLevel === 1 ? partition.abortedTransactions : null, position);
          const out = records[topic.partitions.findIndex((info) => info.partition === partition.partitionIndex)] as TopicRecord[];
          for (const { batch, records: visible } of result.batches) {
            for (const record of visible) {
              const offset = batch.firstOffset + BigInt(record.offsetDelta);
              if (offset >= end) break;
              out.push({
                topic: options.topic,
                partition: partition.partitionIndex,
                offset,
                timestamp: batch.firstTimestamp + record.timestampDelta,
                key: record.key,
                value: record.value,
                headers: record.headers,
              });
            }
          }
          if (result.nextOffset > position) {
            positions.set(partition.partitionIndex, result.nextOffset);
            progressed = true;
          }
        }
      }
      if (!progressed) await sleep(50);
    }
    return records.flat();
  } finally {
    await connections.close();
  }
}

async function listOffsets(
  connections: ClusterConnections,
  topic: string,
  partitions: PartitionInfo[],
  isolationLevel: number,
  timestamp: bigint,
): Promise<Map<number, bigint>> {
  const offsets = new Map<number, bigint>();
  for (const [leaderId, group] of groupByLeader(partitions)) {
    const response = await listOffsetsV9.api.async(await connections.node(leaderId), -1, isolationLevel, [
      { name: topic, partitions: group.map((info) => ({ partitionIndex: info.partition, currentLeaderEpoch: info.leaderEpoch, timestamp })) },
    ]);
    for (const partition of response.topics.flatMap((entry) => entry.partitions)) {
      if (partition.errorCode !== 0) {
        throw new WeirError(
          'LIST_OFFSETS_FAILED',
          `listing offsets of ${topic}/${partition.partitionIndex} failed with Kafka error code ${partition.errorCode}`,
          {
            fault: 'external',
            retriable: true,
          },
        );
      }
      offsets.set(partition.partitionIndex, partition.offset);
    }
  }
  return offsets;
}

function groupByLeader(partitions: PartitionInfo[]): Map<number, PartitionInfo[]> {
  const groups = new Map<number, PartitionInfo[]>();
  for (const info of partitions) {
    const group = groups.get(info.leaderId);
    if (group === undefined) groups.set(info.leaderId, [info]);
    else group.push(info);
  }
  return groups;
}
