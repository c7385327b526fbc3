/**
 * Issue 35, point 5: committed exchange records were never trimmed, so exchange topics grew for
 * the life of a cluster. As Kafka Streams purges its repartition topics, a task that committed a
 * checkpoint deletes (DeleteRecords) what it read of its exchange partitions: each partition is read
 * by that one task, and every later restore starts at or past the committed offsets. Here the
 * exchanges' earliest offsets must move past zero, and a member killed after a purge is replaced
 * by one that restores from the checkpoints and ends with every output exact.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterJobTopics,
  producePayments,
  startClusterMember,
  stopMember,
  totalsAtLeast,
  withMemberLogs,
} from '../../harness/cluster-job.ts';
import { testBrokers } from '../../harness/kafka.ts';
import type { WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

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
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-purge-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  const cluster = `weir-test-purge-${randomBytes(4).toString('hex')}`;
  const members: WeirRun[] = [];
  const member = () => {
    const run = startClusterMember({ cluster, storage, topics, interval: '300ms', env: { WEIR_EXCHANGE_PURGE_INTERVAL_MS: '0' } });
    members.push(run);
    cleanups.push(() => stopMember(run));
    return run;
  };
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
