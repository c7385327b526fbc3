/**
 * The ground is real: against a broker of each transaction.version, one transaction commits and one
 * aborts; a read_committed reader sees exactly the committed records, a read_uncommitted reader sees
 * both. Fails (never skips) when the broker cannot be reached.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Producer, stringSerializers } from '@platformatic/kafka';
import { describeCluster } from '../../src/connectors/kafka/cluster-info.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import { bootstrapList, createTestTopic, testBrokers } from '../harness/kafka.ts';

for (const transactionVersion of [1, 2] as const) {
  describe(`smoke: a real broker with transaction.version=${transactionVersion}`, () => {
    test('read_committed sees the committed transaction only; read_uncommitted sees both', async () => {
      const brokers = testBrokers(transactionVersion);
      const cluster = await describeCluster(brokers);
      assert.equal(cluster.transactionVersion, transactionVersion, 'the broker runs the transaction.version this test is for');

      const { topic, remove } = await createTestTopic(brokers, `smoke-tv${transactionVersion}`, 2);
      const producer = new Producer({
        clientId: 'weir-smoke',
        bootstrapBrokers: bootstrapList(brokers),
        serializers: stringSerializers,
        idempotent: true,
        transactionalId: `${topic}-producer`,
      });
      try {
        const committed = await producer.beginTransaction();
        await committed.send({
          messages: [
            { topic, partition: 0, key: 'k', value: 'committed-1' },
            { topic, partition: 1, key: 'k', value: 'committed-2' },
          ],
        });
        await committed.commit();
        const aborted = await producer.beginTransaction();
        await aborted.send({
          messages: [
            { topic, partition: 0, key: 'k', value: 'aborted-1' },
            { topic, partition: 1, key: 'k', value: 'aborted-2' },
          ],
        });
        await aborted.abort();
      } finally {
        await producer.close();
      }

      const values = async (isolation: 'read_committed' | 'read_uncommitted') =>
        (await readTopic({ bootstrap: brokers, topic, isolation })).map((record) => record.value?.toString()).sort();
      assert.deepEqual(await values('read_committed'), ['committed-1', 'committed-2']);
      assert.deepEqual(await values('read_uncommitted'), ['aborted-1', 'aborted-2', 'committed-1', 'committed-2']);
      await remove();
    });
  });
}
