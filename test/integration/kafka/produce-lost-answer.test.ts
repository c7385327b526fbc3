/**
 * A produce answer lost on the way back (issue 32, point 8). The sink's connections go through a
 * TCP proxy (test/harness/kafka-proxy.ts) in front of a broker of this test's own, which advertises
 * the proxy's address. A transaction writes enough records to keep five produce requests in flight
 * to its partitions; the proxy loses one Produce answer, either swallowing it on an open
 * connection (the request times out) or cutting the connection with it. The broker wrote that
 * request's batches, so its retry must be recognized as a duplicate (the broker keeps the last five
 * batches of each producer and partition) and counted as a success. The transaction then commits,
 * and the output, read read_committed, holds every record once, in order in each partition.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { MessageRecord } from '@platformatic/kafka';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { KafkaProxy, type ProxyFault } from '../../harness/kafka-proxy.ts';

const PARTITIONS = 2;
/** About 1 KB a record, 20 MB in all: some 80 requests of COALESCE_BYTES. */
const RECORDS = 20_000;
const VALUE_BYTES = 1000;
/** How long the sink waits for an answer before it gives the request up (the swallowed one). */
const REQUEST_TIMEOUT_MS = 3000;

describe('a produce answer lost on the way back', () => {
  let folder: string;
  let proxy: KafkaProxy;
  let brokers: BrokerAddress[];
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-lost-answer-'));
    const [brokerPort, controllerPort, proxyPort] = (await freePorts(3)) as [number, number, number];
    proxy = await KafkaProxy.start(proxyPort, { host: '127.0.0.1', port: brokerPort });
    await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port: brokerPort,
      controllerPort,
      // Clients (and the broker's own transaction markers) connect to the address in the metadata: the proxy.
      overrides: { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxyPort},CONTROLLER://127.0.0.1:${controllerPort}` },
      wipe: true,
    });
    brokers = [{ host: '127.0.0.1', port: proxyPort }];
  });
  after(async () => {
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await proxy.close();
    await rm(folder, { recursive: true, force: true });
  });

  async function writeThroughLostAnswer(fault: ProxyFault, label: string): Promise<void> {
    const { topic } = await createTestTopic(brokers, label, PARTITIONS);
    const connections = new ClusterConnections(brokers, { clientId: `weir-${label}`, requestTimeout: REQUEST_TIMEOUT_MS, retryTimeoutMs: 20_000 });
    const driver = new TransactionDriver(connections, { transactionTimeoutMs: 120_000, retryTimeoutMs: 20_000 });
    try {
      const transaction = await driver.initTransaction(`${label}-0`);
      const before = { ...proxy.stats };
      const lost = proxy.arm(fault, 3); // the third produce answer from now: two requests are acknowledged, several are in flight
      const chunk: MessageRecord[] = [];
      for (let seq = 0; seq < RECORDS; seq++) {
        chunk.push({ topic, partition: seq % PARTITIONS, key: Buffer.from(String(seq)), value: Buffer.alloc(VALUE_BYTES, seq % 251) });
        if (chunk.length === 500) await driver.sendPipelined(transaction, chunk.splice(0));
      }
      await driver.sendPipelined(transaction, chunk.splice(0));
      await driver.commitOpen(transaction);
      await lost;
      const requests = proxy.stats.produceRequests - before.produceRequests;
      assert.ok(requests > 10, `${requests} produce requests: enough to fill the in-flight window several times`);
      assert.equal(proxy.stats.produceResponsesLost - before.produceResponsesLost, 1);
    } finally {
      await connections.close();
    }
    const output = await readTopic({ bootstrap: brokers, topic, isolation: 'read_committed', timeoutMs: 60_000 });
    const byPartition: number[][] = Array.from({ length: PARTITIONS }, () => []);
    for (const record of output) byPartition[record.partition]?.push(Number(String(record.key)));
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const expected = Array.from({ length: RECORDS / PARTITIONS }, (_, i) => i * PARTITIONS + partition);
      const got = byPartition[partition] as number[];
      assert.equal(got.length, expected.length, `partition ${partition}: ${got.length} records read_committed, ${expected.length} written`);
      assert.deepEqual(got, expected, `partition ${partition}: every record once, in order`);
    }
  }

  test('an answer swallowed on an open connection (the request times out): the retry is a duplicate, and the output is exact', async () => {
    await writeThroughLostAnswer('drop', 'lost-answer-drop');
  });

  test('a connection cut with an answer on it: the retries of the requests in flight are duplicates, and the output is exact', async () => {
    await writeThroughLostAnswer('cut', 'lost-answer-cut');
  });
});
