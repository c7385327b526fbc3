/**
 * A member runs its tasks on several worker threads (`cluster.threads`, issue 35): two members of
 * two task threads each share the cluster job on the real broker; each member spreads its tasks
 * over both threads (it logs which thread hosts each task). One thread of one member is crashed
 * (WEIR_FAULT=task-thread: an uncaught error in the thread once one of its tasks has committed
 * checkpoint 3): its tasks fail and start again from their checkpoints on a new thread in its
 * place, the member's other thread running on. Then the other member is SIGKILLed mid-run: its
 * tasks move to the first one after the session timeout. The outputs are audited read_committed:
 * every input once in the totals, every running total and every window right. The surviving
 * member's REST API shows its tasks (their metrics and checkpoints come back from the threads).
 */
import assert from 'node:assert/strict';
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
import { until, type WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

/** The threads a member's log says host its tasks ("<stage> task <n> started ... on task thread <t>"). */
const threadsOf = (run: WeirRun): Set<number> =>
  new Set([...run.stderr().matchAll(/task \d+ started .* on task thread (\d+)/g)].map((match) => Number(match[1])));

test('two members of two task threads each: a thread crashed, a member SIGKILLed, every output exact', { timeout: 300_000 }, async () => {
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-threads-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const cluster = `weir-test-threads-${randomBytes(4).toString('hex')}`;
  const members: WeirRun[] = [];
  const member = (env: Record<string, string>, ui = false) => {
    const run = startClusterMember({ cluster, storage, topics, interval: '500ms', env, ui, args: ['--cluster-threads', '2'] });
    members.push(run);
    cleanups.push(() => stopMember(run));
    return run;
  };

  await withMemberLogs(members, async () => {
    const all: Payment[] = Array.from({ length: 9000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, all.slice(0, 3000));
    const crashing = member({ WEIR_FAULT: 'task-thread:3' }, true);
    const killed = member({});
    await Promise.all(members.map((run) => run.waitFor(/this member runs its tasks on 2 task threads/, 120_000)));
    // Each member hosts tasks on both its threads.
    await until('every member to host tasks on both threads', async () => (members.every((run) => threadsOf(run).size === 2) ? true : undefined), 120_000);

    // One thread of one member dies: its tasks start again from their checkpoints, on a new thread in its place.
    // Input keeps coming until it dies (an idle task commits no checkpoint, so the fault needs records to reach checkpoint 3).
    const crashed = /task thread 0 of the member exited \(.*WEIR_FAULT task-thread:3: task thread 0 crashed\)/;
    let produced = 3000;
    await until(
      'task thread 0 to crash',
      async () => {
        if (crashed.test(crashing.stderr())) return true;
        if (produced < 4500) {
          await producePayments(topics.input, all.slice(produced, produced + 100));
          produced += 100;
        }
        await sleep(300);
        return undefined;
      },
      120_000,
    );
    await crashing.waitFor(/task \d+ failed \(task thread 0 of the member exited/, 30_000);
    const afterCrash = () =>
      crashing
        .stderr()
        .split(/task thread 0 of the member exited/)
        .slice(1)
        .join('\n');
    await until(
      'the crashed thread’s tasks to start again',
      async () => (/started from checkpoint \d+ .*on task thread 0/.test(afterCrash()) ? true : undefined),
      60_000,
    );
    await totalsAtLeast(topics, 2000);

    // A member dies mid-run: the other takes its tasks over from their checkpoints.
    await producePayments(topics.input, all.slice(produced, 6000));
    await totalsAtLeast(topics, 4000);
    killed.child.kill('SIGKILL');
    await producePayments(topics.input, all.slice(6000));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
    // Every task is the surviving member's now, over both its threads.
    await crashing.waitFor(/generation \d+, 36 tasks/, 60_000);
    const url = await crashing.url();
    const job = (await (await fetch(`${url}/api/job`)).json()) as { state: string; vertices: { subtasks: unknown[] }[]; checkpoints?: unknown };
    assert.equal(job.state, 'running');
    assert.equal(
      job.vertices.reduce((sum, vertex) => sum + vertex.subtasks.length, 0),
      36,
      'the member shows its 36 tasks as subtasks (their metrics come from its threads)',
    );
    crashing.child.kill('SIGTERM');
    assert.equal(await crashing.exited, 0, 'the member left on SIGTERM, its threads ended');
    assert.match(crashing.stdout(), /member of cluster "[^"]+" left/);
  });
});
