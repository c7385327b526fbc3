import { findCoordinatorV6, offsetFetchV8 } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { InputOffset } from '../connectors/kafka/transaction-driver.ts';
import { WeirError } from '../core/errors/weir-error.ts';

const GROUP_KEY_TYPE = 0;

/**
 * The offsets a group has committed for these partitions (OffsetFetch with requireStable, so a
 * transaction still open on them is waited for rather than read past); -1 where none is committed.
 */
export async function committedOffsets(connections: ClusterConnections, groupId: string, topic: string, partitions: readonly number[]): Promise<InputOffset[]> {
  const found = (await findCoordinatorV6.api.async(await connections.any(), GROUP_KEY_TYPE, [groupId])).coordinators[0];
  if (found === undefined || found.errorCode !== 0) {
    throw new WeirError('CLUSTER_MEMBERSHIP_FAILED', `no group coordinator for "${groupId}" (error ${found?.errorCode})`, {
      fault: 'external',
      retriable: true,
    });
  }
  const response = await offsetFetchV8.api.async(
    await connections.node(found.nodeId),
    [{ groupId, memberEpoch: -1, topics: [{ name: topic, partitionIndexes: [...partitions] }] }],
    true,
  );
  return (response.groups[0]?.topics ?? []).flatMap((entry) =>
    entry.partitions.map((partition) => ({ topic: entry.name, partition: partition.partitionIndex, offset: partition.committedOffset })),
  );
}
