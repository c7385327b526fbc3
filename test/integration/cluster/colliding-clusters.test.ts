/**
 * Issue 32, point 9: a cluster task's transactional id was `weir-<cluster>-<stage uid>-<task>`, so
 * cluster `<c>-x` with stage `payments` and cluster `<c>` with stage `x-payments` used the same ids
 * and fenced each other forever. Here both run at once, each on its own topics; each member's log
 * must show no fencing, and each cluster's outputs are audited read_committed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterJobTopics,
  producePayments,
  startClusterMember,
  stopMember,
  withMemberLogs,
} from '../../harness/cluster-job.ts';
import type { WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

test('two clusters whose names and stage uids once joined into the same transactional ids run side by side, neither fenced', { timeout: 300_000 }, async () => {
  const base = `weir-test-collide-${randomBytes(4).toString('hex')}`;
  const setups = [
    { cluster: base, prefix: 'x-' },
    { cluster: `${base}-x`, prefix: '' },
  ];
  const members: WeirRun[] = [];
  const clusters = await Promise.all(
    setups.map(async ({ cluster, prefix }) => {
      const topics = await clusterJobTopics();
      cleanups.push(topics.remove);
      const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-collide-'));
      cleanups.push(() => rm(storage, { recursive: true, force: true }));
      return { cluster, prefix, topics, storage };
    }),
  );
  await withMemberLogs(members, async () => {
    const all = Array.from({ length: 1500 }, (_, seq) => payment(seq));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    for (const { topics } of clusters) await producePayments(topics.input, all);
    for (const { cluster, prefix, topics, storage } of clusters) {
      const run = startClusterMember({ cluster, storage, topics, interval: '500ms', env: { CJ_UID_PREFIX: prefix } });
      members.push(run);
      cleanups.push(() => stopMember(run));
    }
    for (const run of members) await run.waitFor(/generation \d+, \d+ tasks/, 120_000);
    for (const { topics } of clusters) await producePayments(topics.input, last);
    for (const { topics } of clusters) await auditClusterOutputs(topics, [...all, ...last], all);
    for (const [index, run] of members.entries()) {
      assert.doesNotMatch(run.stderr(), /was fenced|PRODUCER_FENCED|failed \(/, `member of cluster ${clusters[index]?.cluster} was never fenced nor failed`);
    }
  });
});
