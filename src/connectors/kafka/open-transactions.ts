import type { ClusterConnections, TopicInfo } from './cluster-connections.ts';
import { describeProducersV0 } from './kafka-protocol.ts';

/** A transaction open on a partition: it holds read_committed readers at its first offset until it ends. */
export interface OpenPartitionTransaction {
  topic: string;
  partition: number;
  producerId: bigint;
  producerEpoch: number;
  /** The offset of its first record: the partition's last stable offset cannot pass it. */
  startOffset: bigint;
  /** When the producer last wrote to the partition (ms since the epoch). */
  lastTimestamp: number;
}

/** The open transactions on a topic's partitions, from DescribeProducers sent to each leader. */
export async function describeOpenTransactions(connections: ClusterConnections, topic: TopicInfo): Promise<OpenPartitionTransaction[]> {
  const byLeader = new Map<number, number[]>();
  for (const partition of topic.partitions) byLeader.set(partition.leaderId, [...(byLeader.get(partition.leaderId) ?? []), partition.partition]);
  const open: OpenPartitionTransaction[] = [];
  for (const [leader, partitions] of byLeader) {
    const response = await describeProducersV0.api.async(await connections.node(leader), [{ name: topic.name, partitionIndexes: partitions }]);
    for (const entry of response.topics.flatMap((topicResponse) => topicResponse.partitions)) {
      for (const producer of entry.activeProducers) {
        if (producer.currentTxnStartOffset < 0n) continue;
        open.push({
          topic: topic.name,
          partition: entry.partitionIndex,
          producerId: producer.producerId,
          producerEpoch: producer.producerEpoch,
          startOffset: producer.currentTxnStartOffset,
          lastTimestamp: Number(producer.lastTimestamp),
        });
      }
    }
  }
  return open.sort((a, b) => a.partition - b.partition || Number(a.startOffset - b.startOffset));
}
