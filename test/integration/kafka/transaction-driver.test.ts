/**
 * The protocol-level transaction driver against real brokers of transaction.version 1 and 2: a
 * transaction pre-committed by one "process" is committed by another from its committable alone;
 * commits repeat safely; a commit after the transaction was fenced is data loss, loudly.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { type KafkaCommittable, TRANSACTION_PROTOCOL, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

const records = (topic: string, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ topic, partition: (from + i) % 2, key: Buffer.from(`k${from + i}`), value: Buffer.from(String(from + i)) }));

for (const transactionVersion of [1, 2] as const) {
  describe(`transaction driver, transaction.version=${transactionVersion}`, () => {
    test('pre-commit in one process, commit from the committable in another, commit again, fenced commit is data loss', async () => {
      const brokers = testBrokers(transactionVersion);
      const { topic, remove } = await createTestTopic(brokers, `driver-tv${transactionVersion}`, 2);
      const transactionalId = `${topic}-0-0`;
      const writerConnections = new ClusterConnections(brokers);
      const committerConnections = new ClusterConnections(brokers);
      try {
        const writer = new TransactionDriver(writerConnections, { transactionTimeoutMs: 60_000 });
        const open = await writer.initTransaction(transactionalId);
        await writer.send(open, records(topic, 0, 50));
        await writer.send(open, records(topic, 50, 50));
        const committable: KafkaCommittable = {
          version: 1,
          transactionalId,
          producerId: open.producerId,
          producerEpoch: open.producerEpoch,
          protocol: TRANSACTION_PROTOCOL,
        };
        assert.deepEqual(await writer.listOpenTransactions(topic), [transactionalId]);
        assert.equal((await readTopic({ bootstrap: brokers, topic, isolation: 'read_uncommitted' })).length, 100);
        await assert.rejects(readTopic({ bootstrap: brokers, topic, timeoutMs: 500 }), /last stable offset/);

        // Another "process": no InitProducerId, only EndTxn from the committable.
        const committer = new TransactionDriver(committerConnections, { transactionTimeoutMs: 60_000 });
        await committer.commit(committable);
        const committed = await readTopic({ bootstrap: brokers, topic });
        assert.deepEqual(
          committed.map((record) => Number(record.value)).sort((a, b) => a - b),
          Array.from({ length: 100 }, (_, i) => i),
        );
        await committer.commit(committable); // a repeat commit succeeds
        assert.deepEqual(await committer.listOpenTransactions(topic), []);

        // A second transaction on the same id, fenced (as a broker timeout or a reuse would) before its commit.
        const second = await writer.initTransaction(transactionalId);
        await writer.send(second, records(topic, 100, 10));
        await committer.abortLingering(transactionalId);
        const lost: KafkaCommittable = { ...committable, producerId: second.producerId, producerEpoch: second.producerEpoch };
        await assert.rejects(committer.commit(lost), (error: unknown) => {
          assert.ok(error instanceof WeirError);
          assert.equal(error.code, 'DATA_LOSS');
          assert.match(error.message, /the transaction was aborted before its commit and its records are lost/);
          assert.match(error.hint ?? '', /transaction timeout/);
          return true;
        });
        assert.equal((await readTopic({ bootstrap: brokers, topic })).length, 100, 'the fenced records never became visible');
      } finally {
        await writerConnections.close();
        await committerConnections.close();
        await remove();
      }
    });
  });
}
