import { WeirError } from '../../core/errors/weir-error.ts';
import { filterAbortedTransactions } from './aborted-transaction-filter.ts';
import type { ClusterConnections, PartitionInfo, TopicInfo } from './cluster-connections.ts';
import { fetchRequest } from './fetch-request.ts';
import { listOffsetsV9 } from './kafka-protocol.ts';
import { decodeRecords, type FetchedBatch, readRecordBatches } from './record-batch-reader.ts';
import type { TopicRecord } from './topic-record.ts';

export type { TopicRecord } from './topic-record.ts';

export type IsolationLevel = 'read_committed' | 'read_uncommitted';

export interface FetchPosition {
  topic: string;
  partition: number;
  /** The next offset to read. */
  offset: bigint;
}

export interface PartitionFetchResult {
  topic: string;
  partition: number;
  /** The batches a reader of the fetch's isolation may see, their records still bytes: decoded as they are needed ({@link decodeRecords} from `fetchOffset`) or all at once ({@link fetchedRecords}). */
  batches: FetchedBatch[];
  /** The offset this fetch asked from: the first batch may hold records before it, which are not the reader's. */
  fetchOffset: bigint;
  /** Where the next fetch starts: past every batch looked at, markers and aborted data included. */
  nextOffset: bigint;
  highWatermark: bigint;
  lastStableOffset: bigint;
}

/** ListOffsets special timestamps. */
export const EARLIEST_OFFSET = -2n;
export const LATEST_OFFSET = -1n;

const isolationCode = (isolation: IsolationLevel) => (isolation === 'read_committed' ? 1 : 0);

/** The least a partition's share of a fetch's bytes (`maxBytesPerFetch`) can be. */
export const MIN_PARTITION_SHARE = 64 * 1024;

/**
 * One Fetch (v17) per partition leader for these positions, decoded, with aborted transactions
 * and control batches filtered out by Weir itself ({@link filterAbortedTransactions}) at
 * read_committed. `topics` gives each topic's id and leaders. With `maxBytesPerFetch`, the
 * positions share that many bytes evenly (at least MIN_PARTITION_SHARE, at most
 * `maxBytesPerPartition` each); a broker returns a batch above a partition's share only to the
 * first partition with data (KIP-74), so callers rotate the positions' order.
 */
export async function fetchPartitions(
  connections: ClusterConnections,
  topics: ReadonlyMap<string, TopicInfo>,
  positions: readonly FetchPosition[],
  options: { isolation: IsolationLevel; maxWaitMs: number; maxBytesPerPartition?: number; maxBytesPerFetch?: number },
): Promise<PartitionFetchResult[]> {
  const isolationLevel = isolationCode(options.isolation);
  // The fetch's byte budget, shared evenly by the positions (at least MIN_PARTITION_SHARE each).
  const perPartition = options.maxBytesPerPartition ?? 4 * 1024 * 1024;
  const share =
    options.maxBytesPerFetch === undefined
      ? perPartition
      : Math.min(perPartition, Math.max(MIN_PARTITION_SHARE, Math.floor(options.maxBytesPerFetch / Math.max(1, positions.length))));
  const maxBytes = options.maxBytesPerFetch === undefined ? 32 * 1024 * 1024 : Math.max(options.maxBytesPerFetch, share * positions.length);
  const byLeader = new Map<number, FetchPosition[]>();
  for (const position of positions) {
    const leader = partitionInfo(topics, position.topic, position.partition).leaderId;
    const group = byLeader.get(leader);
    if (group === undefined) byLeader.set(leader, [position]);
    else group.push(position);
  }
  const results: PartitionFetchResult[] = [];
  await Promise.all(
    [...byLeader].map(async ([leader, group]) => {
      const byTopic = new Map<string, FetchPosition[]>();
      for (const position of group) byTopic.set(position.topic, [...(byTopic.get(position.topic) ?? []), position]);
      const connection = await connections.node(leader);
      const response = await fetchRequest.async(
        connection,
        options.maxWaitMs,
        1,
        maxBytes,
        isolationLevel,
        0,
        -1,
        [...byTopic].map(([topic, entries]) => ({
          topicId: (topics.get(topic) as TopicInfo).topicId,
          partitions: entries.map((position) => ({
            partition: position.partition,
            currentLeaderEpoch: partitionInfo(topics, topic, position.partition).leaderEpoch,
            fetchOffset: position.offset,
            lastFetchedEpoch: -1,
            partitionMaxBytes: share,
          })),
        })),
        [],
        '',
      );
      const nameOf = new Map([...topics.values()].map((info) => [info.topicId, info.name]));
      for (const topicResponse of response) {
        const topic = nameOf.get(topicResponse.topicId) as string;
        for (const partition of topicResponse.partitions) {
          if (partition.errorCode !== 0) {
            throw Object.assign(
              new WeirError('FETCH_FAILED', `fetching ${topic}/${partition.partitionIndex} failed with Kafka error code ${partition.errorCode}`, {
                fault: 'external',
                retriable: true,
              }),
              { kafkaErrorCode: partition.errorCode, topic, partition: partition.partitionIndex },
            );
          }
          const position = group.find((entry) => entry.topic === topic && entry.partition === partition.partitionIndex) as FetchPosition;
          const batches = partition.records === null ? [] : readRecordBatches(partition.records);
          const filtered = filterAbortedTransactions(batches, isolationLevel === 1 ? partition.abortedTransactions : null, position.offset);
          results.push({
            topic,
            partition: partition.partitionIndex,
            batches: filtered.batches,
            fetchOffset: position.offset,
            nextOffset: filtered.nextOffset,
            highWatermark: partition.highWatermark,
            lastStableOffset: partition.lastStableOffset,
          });
        }
      }
    }),
  );
  return results;
}

/** Every record of a fetch result, decoded (the readers that keep them all: topic reads, audits, `weir consume`). */
export function fetchedRecords(result: PartitionFetchResult): TopicRecord[] {
  const records: TopicRecord[] = [];
  for (const batch of result.batches) decodeRecords(batch, result.topic, result.partition, result.fetchOffset, records);
  return records;
}

/** ListOffsets (v9) for partitions of a topic: EARLIEST_OFFSET, LATEST_OFFSET (last stable offset at read_committed) or a timestamp. */
export async function listOffsets(
  connections: ClusterConnections,
  topic: TopicInfo,
  partitions: readonly PartitionInfo[],
  isolation: IsolationLevel,
  timestamp: bigint,
): Promise<Map<number, bigint>> {
  const offsets = new Map<number, bigint>();
  const byLeader = new Map<number, PartitionInfo[]>();
  for (const info of partitions) byLeader.set(info.leaderId, [...(byLeader.get(info.leaderId) ?? []), info]);
  for (const [leaderId, group] of byLeader) {
    const response = await listOffsetsV9.api.async(await connections.node(leaderId), -1, isolationCode(isolation), [
      { name: topic.name, partitions: group.map((info) => ({ partitionIndex: info.partition, currentLeaderEpoch: info.leaderEpoch, timestamp })) },
    ]);
    for (const partition of response.topics.flatMap((entry) => entry.partitions)) {
      if (partition.errorCode !== 0) {
        throw new WeirError(
          'LIST_OFFSETS_FAILED',
          `listing offsets of ${topic.name}/${partition.partitionIndex} failed with Kafka error code ${partition.errorCode}`,
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

function partitionInfo(topics: ReadonlyMap<string, TopicInfo>, topic: string, partition: number): PartitionInfo {
  const info = topics.get(topic)?.partitions.find((entry) => entry.partition === partition);
  if (info === undefined) throw new WeirError('UNKNOWN_PARTITION', `no metadata for ${topic}/${partition}`, { fault: 'external', retriable: true });
  return info;
}
