/**
 * Issue 35, point 5: committed exchange records were never trimmed, so exchange topics grew for
 * the life of a cluster. As Kafka Streams purges its repartition topics, a task that committed a
 * checkpoint deletes (DeleteRecords) what it read of its exchange partitions: each partition is read
 * by that one task, and every later restore starts at or past the committed offsets. Here the
 * exchanges' earliest offsets must move past zero, and a member killed after a purge is replaced
 * by one that restores from the checkpoints and ends with every output exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, totalsAtLeast, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';
import { testBrokers } from '../../harness/kafka.ts';

/** Per exchange topic of the cluster, the sum of its partitions' earliest offsets (what was deleted). */
async function deletedFromExchanges(cluster: string): Promise<Map<string, bigint>> {
  const admin = new Admin({ clientId: 'weir-test-purge', bootstrapBrokers: [formatBootstrap(testBrokers())] });
  try {
    const topics = (await admin.listTopics()).filter((name) => name.startsWith(`weir-${cluster}-x-`));
    assert.ok(topics.length > 0, `the cluster's exchange topics (weir-${cluster}-x-*)`);
    const listed = await admin.listOffsets({
      topics: topics.map((name) => ({ name, partitions: Array.from({ length: 12 }, (_, partitionIndex) => ({ partitionIndex, timestamp: -2n })) })),
    });
    return new Map(listed.map((topic) => [topic.name, topic.partitions.reduce((sum, partition) => sum + partition.offset, 0n)]));
  } finally {
    await admin.close();
  }
}

test('committed exchange records are deleted, and a restore after the purge is exact', { timeout: 300_000 }, async () => {
  const { cluster, topics, members, member: start } = await clusterTest('purge');
  const member = () => start({ interval: '300ms', env: { WEIR_EXCHANGE_PURGE_INTERVAL_MS: '0' } });
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 2000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    const one = member();
    await one.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, first.length);
    await sleep(2500); // checkpoints past the input, and purges after them
    for (const [topic, deleted] of await deletedFromExchanges(cluster)) assert.ok(deleted > 0n, `records were deleted from ${topic}`);
    one.child.kill('SIGKILL');
    await one.exited;

    const two = member();
    await two.waitFor(/task \d+ started from checkpoint \d+/, 120_000);
    const later = Array.from({ length: 1000 }, (_, seq) => payment(first.length + seq));
    const last = closers(first.length + later.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + (first.length + later.length) * 5 + 5000);
    await producePayments(topics.input, [...later, ...last]);
    await auditClusterOutputs(topics, [...first, ...later, ...last], [...first, ...later]);
  });
});
