/** Helpers for integration tests against the real broker the global setup provides. */
import { randomBytes } from 'node:crypto';
import { Admin, type ConnectionOptions } from '@platformatic/kafka';
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

/** Creates a uniquely named topic and returns it with a function that deletes it again. */
export async function createTestTopic(
  brokers: readonly BrokerAddress[],
  label: string,
  partitions = 1,
  connection: ConnectionOptions = {},
): Promise<{ topic: string; remove: () => Promise<void> }> {
  const topic = uniqueTopicName(label);
  const admin = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: bootstrapList(brokers), ...connection });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } finally {
    await admin.close();
  }
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
