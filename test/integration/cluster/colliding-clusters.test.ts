/**
 * Issue 32, point 9: a cluster task's transactional id was `weir-<cluster>-<stage uid>-<task>`, so
 * cluster `<c>-x` with stage `payments` and cluster `<c>` with stage `x-payments` used the same ids
 * and fenced each other forever. Here both run at once, each on its own topics; each member's log
 * must show no fencing, and each cluster's outputs are audited read_committed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { auditClusterOutputs, BASE_TS, closers, producePayments, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';

test('two clusters whose names and stage uids once joined into the same transactional ids run side by side, neither fenced', { timeout: 300_000 }, async () => {
  const base = `weir-test-collide-${randomBytes(4).toString('hex')}`;
  const clusters = [
    { prefix: 'x-', test: await clusterTest('collide', base) },
    { prefix: '', test: await clusterTest('collide', `${base}-x`) },
  ];
  const members = clusters.flatMap(({ test }) => test.members);
  await withMemberLogs(members, async () => {
    const all = Array.from({ length: 1500 }, (_, seq) => payment(seq));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    for (const { test } of clusters) await producePayments(test.topics.input, all);
    const runs = clusters.map(({ prefix, test }) => test.member({ env: { CJ_UID_PREFIX: prefix } }));
    members.push(...runs);
    for (const run of runs) await run.waitFor(/generation \d+, \d+ tasks/, 120_000);
    for (const { test } of clusters) await producePayments(test.topics.input, last);
    for (const { test } of clusters) await auditClusterOutputs(test.topics, [...all, ...last], all);
    for (const [index, run] of runs.entries()) {
      assert.doesNotMatch(
        run.stderr(),
        /was fenced|PRODUCER_FENCED|failed \(/,
        `member of cluster ${clusters[index]?.test.cluster} was never fenced nor failed`,
      );
    }
  });
});
