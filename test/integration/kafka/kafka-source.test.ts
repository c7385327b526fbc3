/**
 * The Kafka source's reader against a real broker: aborted records never reach the job even when
 * a fetch ends before the abort marker; every kind of starting offsets; topic patterns and
 * partitions added while it runs; offsets committed to the consumer group for monitoring.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import type { KafkaSourceOptions } from '../../../src/connectors/kafka/kafka-source-options.ts';
import type { KafkaSplit } from '../../../src/connectors/kafka/kafka-split.ts';
import { committableOf, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import type { SourceReader } from '../../../src/core/connector/source.ts';
import { bootstrapList, createTestTopic, testBrokers, uniqueTopicName } from '../../harness/kafka.ts';

const value = (label: string, i: number, pad = 0) => ({ value: Buffer.from(`${label}-${i}${'.'.repeat(pad)}`) });

async function write(
  brokers: readonly BrokerAddress[],
  topic: string,
  batches: { label: string; count: number; partition?: number; abort?: boolean; pad?: number }[],
) {
  const connections = new ClusterConnections(brokers);
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
  try {
    for (const batch of batches) {
      const open = await driver.initTransaction(`${topic}-writer`);
      await driver.send(
        open,
        Array.from({ length: batch.count }, (_, i) => ({ topic, partition: batch.partition ?? 0, ...value(batch.label, i, batch.pad) })),
      );
      if (batch.abort) await driver.abort(open);
      else await driver.commit(committableOf(open));
    }
  } finally {
    await connections.close();
  }
}

/** Opens a reader of a one-subtask source on its initial splits. */
async function openReader(options: KafkaSourceOptions<string | null>): Promise<SourceReader<string | null, KafkaSplit>> {
  const source = kafkaSource(options);
  const splits = await source.createInitialSplits(1);
  const reader = source.createReader({ subtaskIndex: 0, parallelism: 1, attemptNumber: 0 });
  await reader.open(splits, splits);
  return reader;
}

async function drain(
  reader: SourceReader<string | null, KafkaSplit>,
  until?: (values: (string | null)[]) => boolean,
  timeoutMs = 30_000,
): Promise<(string | null)[]> {
  const values: (string | null)[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await reader.pollNext(500);
    if (batch === null) return values;
    values.push(...batch);
    if (until?.(values)) return values;
    if (Date.now() > deadline) throw new Error(`the reader did not finish; read ${values.length}`);
  }
}

describe('kafka source', () => {
  test('an aborted transaction spanning several fetches (the marker comes later) never reaches the job', async () => {
    const brokers = testBrokers();
    const { topic, remove } = await createTestTopic(brokers, 'source-aborted', 1);
    try {
      await write(brokers, topic, [
        { label: 'before', count: 100 },
        { label: 'aborted', count: 3000, abort: true, pad: 100 },
        { label: 'after', count: 100 },
      ]);
      const reader = await openReader({
        bootstrap: bootstrapList(brokers),
        topics: [topic],
        bounded: true,
        deserializer: kafkaDeserializers.string,
        maxBytesPerPartition: 16 * 1024,
      });
      const values = await drain(reader);
      await reader.close();
      assert.equal(values.length, 200);
      assert.equal(values.filter((entry) => entry?.startsWith('aborted')).length, 0);
      assert.deepEqual(values.slice(0, 2), ['before-0', 'before-1']);
      assert.equal(values.at(-1), 'after-99');
    } finally {
      await remove();
    }
  });

  test("a fetch's byte budget is shared by the partitions, and a batch larger than its share is not starved by busy partitions", async () => {
    const brokers = testBrokers();
    const { topic, remove } = await createTestTopic(brokers, 'source-fetch-budget', 4);
    try {
      // Partitions 0-2: batches of about 50 KiB (600 KiB each); partition 3: one batch of 200 KiB,
      // above its 64 KiB share of a 256 KiB fetch.
      await write(brokers, topic, [
        ...[0, 1, 2].flatMap((partition) => Array.from({ length: 12 }, () => ({ label: `small${partition}`, count: 1000, partition, pad: 40 }))),
        { label: 'big', count: 20, partition: 3, pad: 10_000 },
      ]);
      const reader = await openReader({
        bootstrap: bootstrapList(brokers),
        topics: [topic],
        bounded: true,
        deserializer: kafkaDeserializers.string,
        maxBytesPerFetch: 256 * 1024,
      });
      const values = await drain(reader);
      await reader.close();
      assert.equal(values.length, 36_020);
      const firstBig = values.findIndex((entry) => entry?.startsWith('big-'));
      // Each fetch takes about one batch (1,000 records) of each small partition; partition 3 goes
      // first in every fourth fetch (a broker returns a batch above the share only to the first
      // partition with data), so the big batch comes within the first fetches, not after the
      // 36,000 small records.
      assert.ok(firstBig >= 0 && firstBig < 18_000, `the big batch was read only after ${firstBig} records`);
      for (const partition of [0, 1, 2]) assert.equal(values.filter((entry) => entry?.startsWith(`small${partition}-`)).length, 12_000);
    } finally {
      await remove();
    }
  });

  test('starting offsets: latest, timestamp, explicit, committed with a fallback', async () => {
    const brokers = testBrokers();
    const { topic, remove } = await createTestTopic(brokers, 'source-starting', 2);
    try {
      await write(brokers, topic, [
        { label: 'old', count: 10, partition: 0 },
        { label: 'old', count: 10, partition: 1 },
      ]);
      await sleep(50);
      const middle = Date.now();
      await sleep(50);
      await write(brokers, topic, [{ label: 'new', count: 5, partition: 0 }]);
      const read = async (startingOffsets: KafkaSourceOptions<string | null>['startingOffsets'], groupId?: string) => {
        const reader = await openReader({
          bootstrap: bootstrapList(brokers),
          topics: [topic],
          bounded: true,
          deserializer: kafkaDeserializers.string,
          startingOffsets,
          ...(groupId ? { groupId } : {}),
        });
        const values = await drain(reader);
        await reader.close();
        return values.sort();
      };
      assert.deepEqual(await read('latest'), []);
      assert.deepEqual(await read({ timestamp: middle }), ['new-0', 'new-1', 'new-2', 'new-3', 'new-4']);
      assert.deepEqual(await read({ offsets: { [`${topic}:0`]: 12 }, fallback: 'latest' }), ['new-1', 'new-2', 'new-3', 'new-4']);
      const groupId = `${topic}-group`;
      const admin = new Admin({ clientId: 'weir-test', bootstrapBrokers: bootstrapList(brokers) });
      await admin.alterConsumerGroupOffsets({ groupId, topics: [{ name: topic, partitionOffsets: [{ partition: 1, offset: 8n }] }] });
      await admin.close();
      // Partition 1 from its committed offset 8; partition 0 has none: the fallback, latest.
      assert.deepEqual(await read({ committed: { fallback: 'latest' } }, groupId), ['old-8', 'old-9']);
    } finally {
      await remove();
    }
  });

  test('a topic pattern: topics and partitions created while it runs are read from their start; offsets are committed to the group', async () => {
    const brokers = testBrokers();
    const stem = uniqueTopicName('pattern');
    const admin = new Admin({ clientId: 'weir-test', bootstrapBrokers: bootstrapList(brokers) });
    const first = `${stem}-a`;
    const second = `${stem}-b`;
    await admin.createTopics({ topics: [first], partitions: 1, replicas: 1 });
    let reader: SourceReader<string | null, KafkaSplit> | undefined;
    try {
      await write(brokers, first, [{ label: 'a0', count: 3 }]);
      const groupId = `${stem}-group`;
      reader = await openReader({
        bootstrap: bootstrapList(brokers),
        topics: new RegExp(`^${stem}-`),
        deserializer: kafkaDeserializers.string,
        partitionDiscoveryInterval: 200,
        groupId,
      });
      assert.deepEqual((await drain(reader, (values) => values.length >= 3)).sort(), ['a0-0', 'a0-1', 'a0-2']);
      await admin.createTopics({ topics: [second], partitions: 1, replicas: 1 });
      await admin.createPartitions({ topics: [{ name: first, count: 2 }] });
      await write(brokers, second, [{ label: 'b0', count: 2 }]);
      await write(brokers, first, [{ label: 'a1', count: 2, partition: 1 }]);
      const later = await drain(reader, (values) => values.length >= 4);
      assert.deepEqual(later.sort(), ['a1-0', 'a1-1', 'b0-0', 'b0-1']);
      const splits = reader.snapshotState(1);
      assert.deepEqual(splits.map((split) => `${split.topic}:${split.partition}`).sort(), [`${first}:0`, `${first}:1`, `${second}:0`]);
      await reader.notifyCheckpointComplete?.(1);
      const committed = await admin.listConsumerGroupOffsets({ groups: [groupId] });
      const offsets = committed.flatMap((group) =>
        group.topics.flatMap((entry) => entry.partitions.map((partition) => `${entry.name}:${partition.partitionIndex}=${partition.committedOffset}`)),
      );
      assert.deepEqual(offsets.sort(), [`${first}:0=4`, `${first}:1=3`, `${second}:0=3`]);
    } finally {
      await reader?.close();
      await admin.deleteTopics({ topics: [first, second] }).catch(() => {});
      await admin.close();
    }
  });
});
