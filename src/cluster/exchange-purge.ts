import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { deleteRecordsV2 } from '../connectors/kafka/kafka-protocol.ts';
import type { InputOffset } from '../connectors/kafka/transaction-driver.ts';

/**
 * How often a task deletes what it has read of its exchange partitions (Kafka Streams'
 * repartition.purge.interval.ms, 30 s); WEIR_EXCHANGE_PURGE_INTERVAL_MS changes it (tests).
 */
export function exchangePurgeIntervalMs(): number {
  const value = Number(process.env.WEIR_EXCHANGE_PURGE_INTERVAL_MS);
  return Number.isFinite(value) && value >= 0 ? value : 30_000;
}

/**
 * Deletes the exchange records below the offsets a task's checkpoint committed (DeleteRecords on
 * each partition's leader), as Kafka Streams purges its repartition topics after a commit. Safe
 * because each exchange partition is read by that task alone and every restore of it starts at its
 * latest committed offsets or past them; a zombie's commit fails before it gets here, and one that
 * committed purges only below what its successor restores. Best effort: a failure is retried at
 * the next purge, and never fails the task.
 */
export async function purgeExchangeRecords(connections: ClusterConnections, offsets: readonly InputOffset[]): Promise<void> {
  const byLeader = new Map<number, Map<string, { partitionIndex: number; offset: bigint }[]>>();
  for (const topic of new Set(offsets.map((entry) => entry.topic))) {
    const info = await connections.topic(topic);
    for (const entry of offsets) {
      if (entry.topic !== topic || entry.offset <= 0n) continue;
      const leader = info.partitions.find((partition) => partition.partition === entry.partition)?.leaderId;
      if (leader === undefined || leader < 0) continue;
      const topics = byLeader.get(leader) ?? new Map();
      byLeader.set(leader, topics);
      const partitions = topics.get(topic) ?? [];
      topics.set(topic, partitions);
      partitions.push({ partitionIndex: entry.partition, offset: entry.offset });
    }
  }
  await Promise.all(
    [...byLeader].map(async ([leader, topics]) => {
      const connection = await connections.node(leader);
      await deleteRecordsV2.api.async(
        connection,
        [...topics].map(([name, partitions]) => ({ name, partitions })),
        30_000,
      );
    }),
  );
}
