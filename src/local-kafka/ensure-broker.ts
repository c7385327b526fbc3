import { describeCluster } from '../connectors/kafka/cluster-info.ts';
import { type BrokerAddress, parseBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import { bootstrapOf, localBrokerStatus, startLocalBroker, stopLocalBroker } from './local-broker.ts';

export interface EnsuredBroker {
  brokers: BrokerAddress[];
  /** Where the brokers came from, for the user. */
  source: string;
  /** Stops the broker if this call started it; does nothing otherwise. */
  release: () => Promise<void>;
}

/**
 * The cluster a command should use: KAFKA_BROKERS when it is set (and reachable), else the local
 * broker of `dataDir`, started here when it does not run yet.
 */
export async function ensureBroker(options: { dataDir?: string; log?: (line: string) => void } = {}): Promise<EnsuredBroker> {
  const configured = process.env.KAFKA_BROKERS;
  if (configured !== undefined && configured.trim() !== '') {
    const brokers = parseBootstrap(configured, 'KAFKA_BROKERS');
    await describeCluster(brokers);
    return { brokers, source: `KAFKA_BROKERS=${configured}`, release: async () => {} };
  }
  const status = await localBrokerStatus(options.dataDir === undefined ? {} : { dataDir: options.dataDir });
  if (status.running && status.state !== undefined && status.problem === undefined) {
    return {
      brokers: [{ host: status.state.host, port: status.state.port }],
      source: `the local broker at ${bootstrapOf(status.state)}`,
      release: async () => {},
    };
  }
  const state = await startLocalBroker({ ...options });
  return {
    brokers: [{ host: state.host, port: state.port }],
    source: `a local broker started for this run at ${bootstrapOf(state)}`,
    release: async () => {
      await stopLocalBroker({ dataDir: state.dataDir });
    },
  };
}
