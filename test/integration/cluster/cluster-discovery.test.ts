/**
 * Issue 32, point 1: a cluster task restores only its own state, so its Kafka source knew only its
 * own partition after a restore, and partition discovery then took every "unknown" partition whose
 * hash picked this task, from the earliest offset: whole partitions read again and committed
 * (duplicates, doubled totals). The cluster job here discovers partitions every second; its member
 * is SIGKILLed after checkpoints, a new one takes the tasks over from their checkpoints, runs past
 * several discovery intervals while input flows, and the outputs are audited read_committed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
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
import type { WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

test("a restored cluster task with partition discovery on reads no other task's partition again: every output exact", { timeout: 300_000 }, async () => {
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-discovery-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  const cluster = `weir-test-discovery-${randomBytes(4).toString('hex')}`;
  const members: WeirRun[] = [];
  const member = () => {
    const run = startClusterMember({ cluster, storage, topics, interval: '500ms', env: { CJ_DISCOVERY: '1s' } });
    members.push(run);
    cleanups.push(() => stopMember(run));
    return run;
  };
  await withMemberLogs(members, async () => {
    const all = Array.from({ length: 4000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, all.slice(0, 2000));
    const first = member();
    await first.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, 2000);
    await sleep(1500); // checkpoints past the input
    first.child.kill('SIGKILL');
    await first.exited;

    const second = member();
    await second.waitFor(/task \d+ started from checkpoint \d+/, 120_000);
    await producePayments(topics.input, all.slice(2000));
    await sleep(4000); // past several discovery intervals
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
  });
});
