/** Helpers for integration tests against the real broker the global setup provides. */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin, type ConnectionOptions } from '@platformatic/kafka';
import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, parseBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';

/** The brokers to test against; `transactionVersion` picks a cluster running that version. A missing broker FAILS the test. */
export function testBrokers(transactionVersion?: 1 | 2): BrokerAddress[] {
  const name = transactionVersion === undefined ? 'KAFKA_BROKERS' : `KAFKA_BROKERS_TV${transactionVersion}`;
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run the integration tests with \`npm test\`, whose global setup provides the brokers`);
  }
  return parseBootstrap(value, name);
}

export function bootstrapList(brokers: readonly BrokerAddress[]): string[] {
  return brokers.map((broker) => `${broker.host}:${broker.port}`);
}

/** A topic name no other test uses. */
export function uniqueTopicName(label: string): string {
  return `weir-test-${label.replace(/[^a-zA-Z0-9-]+/g, '-').slice(0, 40)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Creates topic `topic` and returns once the brokers' metadata names it with every partition led
 * (a moment after its creation), so no test reads or writes it a moment too early.
 */
export async function createNamedTopic(brokers: readonly BrokerAddress[], topic: string, partitions = 1, connection: ConnectionOptions = {}): Promise<void> {
  const admin = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: bootstrapList(brokers), ...connection });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } finally {
    await admin.close();
  }
  const connections = new ClusterConnections(brokers, { clientId: 'weir-test-admin', ...connection });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const info = await connections.topic(topic).catch(() => undefined);
      if (info !== undefined && info.partitions.length === partitions && info.partitions.every((entry) => entry.leaderId >= 0)) break;
      if (Date.now() > deadline) throw new Error(`topic ${topic} is not in the brokers' metadata 30 s after its creation`);
      await sleep(50);
    }
  } finally {
    await connections.close();
  }
}

/** Creates a uniquely named topic and returns it with a function that deletes it again. */
export async function createTestTopic(
  brokers: readonly BrokerAddress[],
  label: string,
  partitions = 1,
  connection: ConnectionOptions = {},
): Promise<{ topic: string; remove: () => Promise<void> }> {
  const topic = uniqueTopicName(label);
  await createNamedTopic(brokers, topic, partitions, connection);
  return {
    topic,
    remove: async () => {
      const cleanup = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: bootstrapList(brokers), ...connection });
      try {
        await cleanup.deleteTopics({ topics: [topic] });
      } finally {
        await cleanup.close();
      }
    },
  };
}
