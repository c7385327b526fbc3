import type { ConnectionOptions } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import { ClusterConnections } from './cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from './kafka-connection-options.ts';
import { apiVersionsV3 } from './kafka-protocol.ts';

export interface ClusterInfo {
  clusterId: string | null;
  brokers: BrokerAddress[];
  /** The cluster's finalized `transaction.version` feature level (0 when unset: classic only). */
  transactionVersion: number;
  /** Every finalized feature level, by name (metadata.version, transaction.version, ...). */
  features: Record<string, number>;
}

/**
 * Asks a reachable bootstrap broker for its API versions (which carry the finalized features,
 * among them transaction.version) and for the cluster metadata. A broker that accepts connections
 * but has no registered brokers yet counts as not ready.
 */
export async function describeCluster(bootstrap: readonly BrokerAddress[], timeoutMs = 5_000, connection: ConnectionOptions = {}): Promise<ClusterInfo> {
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-cluster-info', ...connection, connectTimeout: timeoutMs, requestTimeout: timeoutMs });
  try {
    // Metadata first: it turns a connection the broker closes into a clear error.
    const metadata = await connections.metadata([]);
    const versions = await apiVersionsV3.api.async(await connections.any(), 'weir', '0');
    if (metadata.brokers.length === 0) {
      throw new WeirError('BROKER_UNREACHABLE', `Kafka at ${formatBootstrap(bootstrap)} answers but has no registered broker yet`, {
        hint: 'wait for the broker to finish starting',
        fault: 'external',
        retriable: true,
      });
    }
    const features: Record<string, number> = {};
    for (const feature of versions.finalizedFeatures ?? []) features[feature.name] = feature.maxVersionLevel;
    return {
      clusterId: metadata.clusterId ?? null,
      brokers: metadata.brokers.map((entry) => ({ host: entry.host, port: entry.port })),
      transactionVersion: features['transaction.version'] ?? 0,
      features,
    };
  } finally {
    await connections.close().catch(() => {});
  }
}
