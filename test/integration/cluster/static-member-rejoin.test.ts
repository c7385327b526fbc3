/**
 * Static members (`--instance-id`) paused past the session timeout, on the real broker. The
 * coordinator drops a static member whose session expires, so its member id is gone: woken, the
 * member must rejoin as Kafka's Java consumer does (an empty member id under the same
 * group.instance.id), not loop on UNKNOWN_MEMBER_ID. While it is out of the group its
 * /health/ready answers 503; back in, 200, and it runs tasks again.
 *
 * Two static members share the job. `a` is paused past the session timeout (`b` takes every
 * task); then `b` is paused and `a` woken: `a` is out of the group, and its rejoin waits for the
 * rebalance to drop `b` (a few seconds out of the group: what its readiness must say), then it
 * runs every task. `b` woken rejoins the same way and takes its share back. Read back
 * read_committed: every input once, every running total and every window right; `weir cluster
 * status` names the group's generation (not -1).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterStatus } from '../../../src/cluster/cluster-status.ts';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import { weir } from '../../harness/cli.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, totalsAtLeast, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';
import { bootstrapList, testBrokers } from '../../harness/kafka.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

const REJOIN_BOUND_MS = 30_000;

/** Polls a member's /health/ready every 50 ms until stopped: each answer's status code (0: no answer in time, e.g. while paused). */
function pollReadiness(url: string): { answers: { at: number; status: number }[]; stop: () => Promise<void> } {
  const answers: { at: number; status: number }[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const status = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(500) }).then(
        (response) => response.status,
        () => 0,
      );
      answers.push({ at: Date.now(), status });
      await sleep(50);
    }
  })();
  return {
    answers,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** Waits until `run` logs a rejoin (a generation with tasks) after it logged that it is out of the group, past stderr offset `from`. */
async function rejoined(run: WeirRun, from: number, name: string): Promise<void> {
  await until(
    `${name} to rejoin the group after being out of it`,
    async () => {
      const after = run.stderr().slice(from);
      const out = after.search(/this member is out of the group/);
      return out >= 0 && /generation \d+, [1-9]\d* tasks/.test(after.slice(out)) ? true : undefined;
    },
    REJOIN_BOUND_MS,
  ).catch((error: Error) => {
    throw new Error(`${error.message} within ${REJOIN_BOUND_MS} ms; ${name}'s log since it was woken:\n${run.stderr().slice(from).slice(-3000)}`);
  });
}

test('static members paused past the session timeout rejoin under their instance ids (not ready while out), run tasks again; exact', {
  timeout: 600_000,
}, async () => {
  const scaffold = await clusterTest('static');
  const { cluster, topics, members } = scaffold;
  const member = (instance: string) => scaffold.member({ ui: true, args: ['--instance-id', instance] });

  await withMemberLogs(members, async () => {
    const all: Payment[] = Array.from({ length: 8000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, all.slice(0, 2000));
    const a = member('static-a');
    const b = member('static-b');
    await Promise.all([a, b].map((run) => run.waitFor(/generation \d+, \d+ tasks/, 120_000)));
    const aUrl = await a.url();
    await until('a to be ready', async () => ((await fetch(`${aUrl}/health/ready`)).status === 200 ? true : undefined), 60_000);
    await totalsAtLeast(topics, 1000);

    // a paused past its session timeout: the coordinator drops it (instance id and member id), b takes every task.
    a.child.kill('SIGSTOP');
    await sleep(9000);
    await producePayments(topics.input, all.slice(2000, 4000));
    await totalsAtLeast(topics, 3500);

    // b paused, a woken: a is out of the group; its rejoin waits for the group to drop b.
    b.child.kill('SIGSTOP');
    const aFrom = a.stderr().length;
    const readiness = pollReadiness(aUrl);
    a.child.kill('SIGCONT');
    await rejoined(a, aFrom, 'a').catch(async (error: Error) => {
      await readiness.stop();
      const seen = readiness.answers.map((answer) => answer.status);
      throw new Error(`${error.message}\n/health/ready answered meanwhile: ${[...new Set(seen)].join(', ')} (${seen.length} polls)`);
    });
    const rejoinedAt = Date.now();
    await until(
      'a to be ready again',
      async () => (readiness.answers.some((answer) => answer.at > rejoinedAt && answer.status === 200) ? true : undefined),
      30_000,
    );
    await readiness.stop();
    const whileOut = readiness.answers.filter((answer) => answer.at < rejoinedAt && answer.status !== 0);
    assert.ok(
      whileOut.some((answer) => answer.status === 503),
      `a's /health/ready answered 503 while it was out of the group (answers: ${whileOut.map((answer) => answer.status).join(', ')})`,
    );
    await producePayments(topics.input, all.slice(4000, 6000));
    await totalsAtLeast(topics, 5500);

    // b woken: out of the group the same way, it rejoins and takes its share back.
    const bFrom = b.stderr().length;
    b.child.kill('SIGCONT');
    await rejoined(b, bFrom, 'b');
    await producePayments(topics.input, all.slice(6000));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);

    // `weir cluster status`: both members own tasks, and a Stable group has a generation.
    const view = await until(
      'a stable cluster status with both members owning tasks',
      async () => {
        const status = await weir(['cluster', 'status', cluster, '--json'], { KAFKA_BROKERS: bootstrapList(testBrokers()).join(',') });
        assert.equal(status.code, 0, status.stderr);
        const read = JSON.parse(status.stdout) as ClusterStatus;
        return read.state === 'Stable' && read.members.length === 2 && read.members.every((entry) => entry.tasks.length > 0) ? read : undefined;
      },
      60_000,
    );
    assert.ok(view.generation !== undefined && view.generation > 0, `a Stable group's generation: ${view.generation}`);
    assert.deepEqual(view.members.map((entry) => entry.id).sort(), ['static-a', 'static-b']);
    for (const run of members) run.child.kill('SIGTERM');
    await Promise.all(members.map((run) => Promise.race([run.exited, sleep(20_000)])));
  });
});
