/**
 * Tasks that do not move keep committing through a rebalance, on the real broker. Three members
 * share the job (60 tasks, a 200 ms interval) while input flows into every partition; one leaves
 * (SIGTERM: LeaveGroup, a rebalance at once) and comes back (another), twice. The staying members
 * keep their own tasks in each new generation, but a commit sent under the old one is refused
 * (ILLEGAL_GENERATION): such a task starts again from its latest checkpoint as soon as its member
 * holds a newer generation than the commit carried, even when it holds it already (then it waited
 * for yet another generation, which did not come: 12-18 s, up to two session timeouts), and from
 * the checkpoint its run last committed, without reading the checkpoint topic. Whether a
 * refusal lands after its member's SyncGroup is a race, so four rebalances give it several
 * chances. Measured from the checkpoint topic: per task a member owned throughout, the longest
 * time between two of its commits (logged), bounded by the session timeout. Then the outputs are
 * audited read_committed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterTopicName } from '../../../src/cluster/stage-plan.ts';
import { decodeTaskCheckpoint } from '../../../src/cluster/task-checkpoint.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import type { Total } from '../../fixtures/jobs/cluster-job.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, readJson, withMemberLogs } from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, steadyInput } from '../../harness/cluster-test.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const SESSION_MS = 6000; // startClusterMember's --session-timeout

test('a member leaves and comes back: the tasks that stay on the other keep committing (no wait for a generation that does not come); exact', {
  timeout: 600_000,
}, async () => {
  const scaffold = await clusterTest('staying');
  const { cluster, topics, members } = scaffold;
  // 12 source tasks and two keyed stages of one task per key group (24 each): 60 tasks.
  const member = () => scaffold.member({ interval: '200ms', env: { CJ_MAX_PARALLELISM: '24' }, args: ['--keyed-tasks', '24'] });
  const totals = async () => (await readJson<Total>(topics.totals)).length;
  const progress = async (more: number) => {
    const target = (await totals()) + more;
    await until(`${target} totals`, async () => ((await totals()) >= target ? true : undefined), 180_000);
  };

  const input = steadyInput(topics.input);
  cleanUpAfter(async () => void (await input.stop()));
  await withMemberLogs(members, async () => {
    const a = member();
    await a.waitFor(/generation \d+, 60 tasks/, 120_000);
    const c = member();
    await c.waitFor(/generation \d+, \d+ tasks/, 120_000);
    let b = member();
    await b.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await progress(1500);

    // Twice, b leaves (LeaveGroup: a rebalance at once) and comes back (another): a and c keep their own tasks through all four.
    const leftAt = Date.now();
    // Each rebalance is given longer than a session timeout before the next, which would end a stall.
    for (let round = 0; round < 2; round++) {
      b.child.kill('SIGTERM');
      await b.exited;
      await Promise.all([progress(1000), sleep(SESSION_MS + 1000)]);
      b = member();
      await b.waitFor(/generation \d+, \d+ tasks/, 120_000);
      await Promise.all([progress(1000), sleep(SESSION_MS + 1000)]);
    }
    const endAt = Date.now();

    // Per task: its commits (the checkpoint topic, read_committed) in order, with who made them.
    const commits = new Map<string, { at: number; member: string }[]>();
    const checkpointTopic = clusterTopicName(cluster, 'checkpoints');
    for (const record of await readTopic({ bootstrap: testBrokers(), topic: checkpointTopic })) {
      const checkpoint = decodeTaskCheckpoint(record.value as Buffer, checkpointTopic);
      const key = `${checkpoint.stage}/${checkpoint.task}`;
      commits.set(key, [...(commits.get(key) ?? []), { at: checkpoint.completedAt, member: checkpoint.member.memberId }]);
    }
    // The tasks a owned from before b left to the end: every commit in that span by one member.
    const gaps: [string, number][] = [];
    for (const [task, list] of commits) {
      const span = list.filter((entry) => entry.at >= leftAt - 2000);
      if (span.length < 2 || new Set(list.filter((entry) => entry.at >= leftAt - 10_000).map((entry) => entry.member)).size !== 1) continue;
      if (span.at(-1)?.at === undefined || (span.at(-1)?.at as number) < endAt - 5000) continue;
      let longest = 0;
      for (let i = 1; i < span.length; i++) longest = Math.max(longest, (span[i]?.at as number) - (span[i - 1]?.at as number));
      gaps.push([task, longest]);
    }
    gaps.sort((x, y) => y[1] - x[1]);
    console.log(
      `tasks that stayed: ${gaps.length}; the longest time between two commits of each, longest first (ms): ${gaps.map(([task, ms]) => `${task} ${ms}`).join(', ')}`,
    );
    const refused = [a, c].flatMap((run) => run.stderr().split('\n')).filter((line) => /was fenced \(.*ILLEGAL_GENERATION/.test(line));
    console.log(`the staying member's commits refused by the group meanwhile: ${refused.length}\n${refused.join('\n')}`);
    // A refused task still here starts again from what its run last committed, without reading the checkpoint topic (restart-checkpoint.ts).
    const ownLatest = [a, c].flatMap((run) => run.stderr().split('\n')).filter((line) => /started from checkpoint \d+, its own latest/.test(line));
    console.log(`restarts from the task's own latest checkpoint: ${ownLatest.length}`);
    assert.ok(gaps.length >= 6, `tasks stayed on one member through both rebalances (${gaps.length})`);
    const [worst, worstMs] = gaps[0] as [string, number];
    if (refused.length > 0) assert.ok(ownLatest.length > 0, 'a refused staying task started again from its own latest checkpoint');
    assert.ok(worstMs < SESSION_MS, `staying task ${worst} went ${worstMs} ms without a commit (the session timeout is ${SESSION_MS} ms)`);

    const produced = await input.stop();
    const last = closers(produced.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + produced.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...produced, ...last], produced);
    for (const run of [a, c, b]) run.child.kill('SIGTERM');
    await Promise.all([a, c, b].map((run) => Promise.race([run.exited, sleep(20_000)])));
  });
});
