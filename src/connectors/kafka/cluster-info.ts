import { apiVersionsV3, Connection, metadataV12 } from '@platformatic/kafka';
import { WeirError } from '../../errors.ts';
import { type BrokerAddress, formatBootstrap } from './bootstrap.ts';

export interface ClusterInfo {
  clusterId: string | null;
  brokers: BrokerAddress[];
  /** The cluster's finalized `transaction.version` feature level (0 when unset: classic only). */
  transactionVersion: number;
  /** Every finalized feature level, by name (metadata.version, transaction.version, ...). */
  features: Record<string, number>;
}

const CLIENT_ID = 'weir-cluster-info';

/**
 * Asks the first reachable bootstrap broker for its API versions (which carry the finalized
 * features, among them transaction.version) and for the cluster metadata. A broker that accepts
 * connections but has no registered brokers yet counts as not ready.
 */
export async function describeCluster(bootstrap: readonly BrokerAddress[], timeoutMs = 5_000): Promise<ClusterInfo> {
  const failures: string[] = [];
  for (const broker of bootstrap) {
    const connection = new Connection(CLIENT_ID, { connectTimeout: timeoutMs, requestTimeout: timeoutMs });
    try {
      await connection.connect(broker.host, broker.port);
      const versions = await apiVersionsV3.api.async(connection, 'weir', '0');
      const metadata = await metadataV12.api.async(connection, [], false, false);
      const features: Record<string, number> = {};
      for (const feature of versions.finalizedFeatures ?? []) features[feature.name] = feature.maxVersionLevel;
      if (metadata.brokers.length === 0) throw new Error('the broker has not registered yet');
      return {
        clusterId: metadata.clusterId ?? null,
        brokers: metadata.brokers.map((entry) => ({ host: entry.host, port: entry.port })),
        transactionVersion: features['transaction.version'] ?? 0,
        features,
      };
    } catch (error) {
      failures.push(`${broker.host}:${broker.port}: ${describeNetworkError(error)}`);
    } finally {
      await connection.close().catch(() => {});
    }
  }
  throw new WeirError('BROKER_UNREACHABLE', `cannot reach Kafka at ${formatBootstrap(bootstrap)} (${failures.join('; ')})`, {
    hint: 'start a local broker with `weir kafka start`, or set KAFKA_BROKERS to a reachable cluster',
    fault: 'external',
    retriable: true,
  });
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as (Error & { code?: string }) | undefined;
  return cause?.code ?? cause?.message ?? error.message;
}
