/**
 * The broker a benchmark script runs against: the one `--brokers` names, or a local one it starts
 * in `folder` (port 29092, or a free one) and stops when done.
 */
import { join } from 'node:path';
import { type BrokerAddress, parseBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { startLocalBroker, stopLocalBroker } from '../../src/local-kafka/local-broker.ts';
import { freePort, isPortFree } from '../../src/local-kafka/ports.ts';

export interface BenchBroker {
  brokers: BrokerAddress[];
  /** Stops the broker this script started; nothing for one named by `--brokers`. */
  release: () => Promise<void>;
}

export async function benchBroker(brokersOption: string | undefined, folder: string, log: (line: string) => void): Promise<BenchBroker> {
  if (brokersOption !== undefined) return { brokers: parseBootstrap(brokersOption, '--brokers'), release: async () => {} };
  const dataDir = join(folder, 'broker');
  const state = await startLocalBroker({ dataDir, port: (await isPortFree(29092)) ? 29092 : await freePort(), log });
  return { brokers: [{ host: state.host, port: state.port }], release: async () => void (await stopLocalBroker({ dataDir })) };
}
