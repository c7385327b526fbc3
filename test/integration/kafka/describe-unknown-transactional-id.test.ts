/**
 * DescribeTransactions against the real brokers (transaction.version 1 and 2) for an id never used:
 * the coordinator answers TRANSACTIONAL_ID_NOT_FOUND, as it does for an id expired after
 * transactional.id.expiration.ms. Nothing is open under it: described as nothing, not thrown. A
 * known id alongside it is still described.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

for (const transactionVersion of [1, 2] as const) {
  describe(`DescribeTransactions, transaction.version=${transactionVersion}`, () => {
    test('an id the broker never knew is nothing open; a known one is described', async () => {
      const brokers = testBrokers(transactionVersion);
      const { topic, remove } = await createTestTopic(brokers, `describe-unknown-tv${transactionVersion}`, 1);
      const connections = new ClusterConnections(brokers);
      try {
        const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000, retryTimeoutMs: 10_000 });
        const unknown = `never-used-${randomUUID()}`;
        assert.deepEqual(await driver.describeTransactions([unknown]), []);
        const known = `${topic}-0-0`;
        const open = await driver.initTransaction(known);
        await driver.send(open, [{ topic, partition: 0, value: Buffer.from('x') }]);
        const described = await driver.describeTransactions([unknown, known]);
        assert.deepEqual(
          described.map(({ transactionalId, state, partitions }) => ({ transactionalId, state, partitions })),
          [{ transactionalId: known, state: 'Ongoing', partitions: 1 }],
        );
        await driver.abort(open);
      } finally {
        await connections.close();
        await remove();
      }
    });
  });
}
