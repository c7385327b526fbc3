/**
 * Issue 35, point 6: a cluster scaled 1 -> 3 -> 2 members while its savepoints are under way,
 * against the real broker. So that the tasks move while a savepoint waits for their parts (not
 * before it is asked for, nor after it is done), a member is paused (SIGSTOP) before each savepoint
 * is asked for, and cannot write its parts:
 * - 1 -> 3: the only member paused, a savepoint asked for, two members start: they take every task
 *   after the session timeout and write the parts; the paused member, woken, is fenced and joins
 *   again as the third.
 * - 3 -> 2: a member paused, a savepoint asked for, the member SIGKILLed: the other two take its
 *   tasks and write their parts.
 * Then `weir stop --cluster` takes a last savepoint and the members leave. The keyed stages run 4
 * tasks over 12 key groups (`--keyed-tasks`). Each savepoint has every task's part, and ONE process going on from the last one gives, with the cluster's output before
 * it, every input once in the totals with the right running total and every window once with the
 * right sum (audited read_committed).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { weir } from '../../harness/cli.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterBrokersEnv,
  producePayments,
  startJobProcess,
  stopMember,
  totalsAtLeast,
  withMemberLogs,
} from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, payment, steadyInput } from '../../harness/cluster-test.ts';
import { until } from '../../harness/weir-run.ts';

/** `weir savepoint --cluster` in the background: resolves with its folder (or fails the test with its output). */
async function savepointOf(cluster: string, storage: string): Promise<{ id: number; path: string }> {
  const result = await weir(['savepoint', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '120s'], clusterBrokersEnv());
  assert.equal(result.code, 0, `weir savepoint --cluster failed:\n${result.stderr}`);
  const [, id, path] = /savepoint (\d+): (\S+)/.exec(result.stdout) ?? [];
  assert.ok(path !== undefined, `it prints the savepoint: ${result.stdout}`);
  return { id: Number(id), path };
}

/** The keyed stages run 4 tasks (cluster.keyedTasks) over the job's 12 key groups: each a range of 3. */
const KEYED = { args: ['--keyed-tasks', '4'] };

/** Every operator of a savepoint has all its task parts: the source's 12, each keyed stage's 4. */
async function assertWhole(path: string): Promise<void> {
  const metadata = JSON.parse(await readFile(join(path, '_metadata'), 'utf8')) as { kind: string; operators: { uid: string; subtasks: unknown[] }[] };
  assert.equal(metadata.kind, 'savepoint');
  for (const [uid, parts] of [
    ['payments', 12],
    ['totals', 4],
    ['windows', 4],
  ] as const)
    assert.equal(metadata.operators.find((operator) => operator.uid === uid)?.subtasks.length, parts, `${uid} has every task's part in ${path}`);
}

test('savepoints while the cluster scales 1 -> 3 -> 2 members: each whole, one process from the last one exact', { timeout: 480_000 }, async () => {
  const { cluster, topics, storage, members, member } = await clusterTest('savepoint-scaling');
  const processStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-savepoint-scaling-one-'));
  cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 400 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    const one = member(KEYED);
    await one.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, first.length);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(1000);

    // 1 -> 3 while the first savepoint is taken: its only member paused, two start.
    one.child.kill('SIGSTOP');
    const firstSavepoint = savepointOf(cluster, storage);
    const joined = [member(KEYED), member(KEYED)];
    const taken = await firstSavepoint;
    await assertWhole(taken.path);
    one.child.kill('SIGCONT');
    await one.waitFor(/out of the group|fenced/, 120_000);
    await until(
      'the woken member back in the group',
      async () => (/generation \d+, \d+ tasks[\s\S]*generation \d+, \d+ tasks/.test(one.stderr()) ? true : undefined),
      120_000,
    );

    // 3 -> 2 while the second one is taken: a member paused, then killed; the others write its parts.
    await sleep(1500);
    joined[0]?.child.kill('SIGSTOP');
    const secondSavepoint = savepointOf(cluster, storage);
    await sleep(500);
    if (joined[0] !== undefined) await stopMember(joined[0]);
    const second = await secondSavepoint;
    await assertWhole(second.path);
    assert.ok(second.id > taken.id);

    await sleep(1500);
    const stop = await weir(['stop', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '120s'], clusterBrokersEnv());
    assert.equal(stop.code, 0, `weir stop --cluster failed:\n${stop.stderr}`);
    const [, , stopPath] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.ok(stopPath !== undefined, `it prints the savepoint: ${stop.stdout}`);
    await assertWhole(stopPath);
    const later = await input.stop();
    for (const run of [one, ...joined]) await stopMember(run);

    // One process goes on from the last savepoint: with the cluster's output, every input once.
    const resumed = startJobProcess({ storage: processStorage, topics, interval: '500ms', args: ['--from-savepoint', stopPath] });
    members.push(resumed);
    cleanUpAfter(() => stopMember(resumed));
    const all = [...first, ...later];
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
  });
});
