import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { offsetFetchV8 } from '../connectors/kafka/kafka-protocol.ts';
import type { InputOffset } from '../connectors/kafka/transaction-driver.ts';
import { withGroupCoordinator } from './find-group-coordinator.ts';

/**
 * The offsets a group has committed for these partitions (OffsetFetch with requireStable, so a
 * transaction still open on them is waited for rather than read past); -1 where none is committed.
 */
export async function committedOffsets(connections: ClusterConnections, groupId: string, topic: string, partitions: readonly number[]): Promise<InputOffset[]> {
  const response = await withGroupCoordinator(connections, groupId, (coordinator) =>
    offsetFetchV8.api.async(coordinator, [{ groupId, memberEpoch: -1, topics: [{ name: topic, partitionIndexes: [...partitions] }] }], true),
  );
  return (response.groups[0]?.topics ?? []).flatMap((entry) =>
    entry.partitions.map((partition) => ({ topic: entry.name, partition: partition.partitionIndex, offset: partition.committedOffset })),
  );
}
