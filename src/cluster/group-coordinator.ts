import type { Connection } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { findCoordinatorV6 } from '../connectors/kafka/kafka-protocol.ts';
import { WeirError } from '../core/errors/weir-error.ts';

const GROUP_KEY_TYPE = 0;

/** A connection to the broker that coordinates this consumer group (FindCoordinator). */
export async function groupCoordinator(connections: ClusterConnections, groupId: string): Promise<Connection> {
  const found = (await findCoordinatorV6.api.async(await connections.any(), GROUP_KEY_TYPE, [groupId])).coordinators[0];
  if (found === undefined || found.errorCode !== 0) {
    throw new WeirError('CLUSTER_MEMBERSHIP_FAILED', `no group coordinator for "${groupId}" (error ${found?.errorCode})`, {
      fault: 'external',
      retriable: true,
    });
  }
  return connections.node(found.nodeId);
}
