/**
 * Connection options pass through: a broker with a SASL/PLAIN listener; the transaction driver and
 * the source reach it with `connection: { sasl }`, and a wrong password is a clear error.
 * (TLS, mutual TLS and SCRAM, and the commands' connection settings: secured-cluster.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { LATEST_OFFSET, listOffsets } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { committableOf, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { createTestTopic } from '../../harness/kafka.ts';

describe('SASL/PLAIN connection options', () => {
  let folder: string;
  let saslPort: number;
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-sasl-'));
    const [port, controllerPort, sasl] = (await freePorts(3)) as [number, number, number];
    saslPort = sasl;
    await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port,
      controllerPort,
      wipe: true,
      overrides: {
        listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
        'advertised.listeners': `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
        'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
        'sasl.enabled.mechanisms': 'PLAIN',
        'listener.name.sasl_plaintext.plain.sasl.jaas.config': 'org.apache.kafka.common.security.plain.PlainLoginModule required user_weir="secret";',
      },
    });
  });
  after(async () => {
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await rm(folder, { recursive: true, force: true });
  });

  test('the driver writes and commits, and the source reads, through the SASL listener', async () => {
    const brokers = [{ host: '127.0.0.1', port: saslPort }];
    const sasl = { mechanism: 'PLAIN' as const, username: 'weir', password: 'secret' };
    const { topic } = await createTestTopic(brokers, 'sasl', 1, { sasl });
    const connections = new ClusterConnections(brokers, { sasl });
    try {
      const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
      const open = await driver.initTransaction(`${topic}-txn`);
      await driver.send(open, [{ topic, partition: 0, value: Buffer.from('over-sasl') }]);
      await driver.commit(committableOf(open));
      // The commit markers follow EndTxn: wait until the record is below the last stable offset.
      const info = await connections.topic(topic);
      while ((await listOffsets(connections, info, info.partitions, 'read_committed', LATEST_OFFSET)).get(0) === 0n) await sleep(20);
    } finally {
      await connections.close();
    }
    const source = kafkaSource({
      bootstrap: `127.0.0.1:${saslPort}`,
      topics: [topic],
      bounded: true,
      deserializer: kafkaDeserializers.string,
      connection: { sasl },
    });
    const splits = await source.createInitialSplits(1);
    const reader = source.createReader({ subtaskIndex: 0, parallelism: 1, attemptNumber: 0 });
    try {
      await reader.open(splits, splits);
      const values: (string | null)[] = [];
      for (let batch = await reader.pollNext(100); batch !== null; batch = await reader.pollNext(100)) values.push(...batch);
      assert.deepEqual(values, ['over-sasl']);
    } finally {
      await reader.close();
    }
  });

  test('a wrong password is a clear error', async () => {
    const connections = new ClusterConnections([{ host: '127.0.0.1', port: saslPort }], { sasl: { mechanism: 'PLAIN', username: 'weir', password: 'wrong' } });
    try {
      await assert.rejects(connections.metadata([]), (error: unknown) => {
        assert.ok(error instanceof WeirError);
        assert.equal(error.code, 'KAFKA_AUTHENTICATION_FAILED');
        assert.match(error.message, /^authentication to Kafka at 127\.0\.0\.1:\d+ failed: /);
        assert.match(error.hint ?? '', /connection\.sasl/);
        return true;
      });
    } finally {
      await connections.close();
    }
  });
});
