/**
 * Cluster mode while input flows steadily: scaling 1 -> 3 -> 2 members and a rolling restart of
 * every member, one of them SIGKILLed (static membership: each comes back under its instance id and
 * gets its tasks back without waiting for the session timeout), with half of the input's
 * partitions empty all along, its keyed stages of 4 tasks each holding a range of key groups.
 * Those partitions' tasks go idle, and their idleness crosses the exchange topics: the windows
 * downstream close on the other partitions' watermarks alone, as in one process. Read back
 * read_committed: every input once in the totals, every running total right, every window of the
 * input once and right; and the same input through one process (no --cluster) gives the same windows.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payment, Total, WindowSum } from '../../fixtures/jobs/cluster-job.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterJobModule,
  clusterJobTopics,
  partitionOf,
  producePayments,
  readJson,
  startClusterMember,
  stopMember,
} from '../../harness/cluster-job.ts';
import { steadyInput } from '../../harness/cluster-test.ts';
import { bootstrapList, createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { startWeirRun, until, type WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

/**
 * The keyed stages' tasks (cluster.keyedTasks) over the job's 12 key groups: each task holds a
 * range of 3, which moves as one with its partition as members come and go.
 */
const KEYED_TASKS = 4;

/** Accounts of partitions 0 to 5 only: partitions 6 to 11 stay empty. */
const ACCOUNTS = Array.from({ length: 40 }, (_, a) => `a${a}`).filter((account) => partitionOf(account) < 6);
const payment = (seq: number): Payment => ({ seq, account: ACCOUNTS[seq % ACCOUNTS.length] as string, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

test('scaling 1 -> 3 -> 2 members and a rolling restart while input flows, half the partitions idle: every output exact', { timeout: 600_000 }, async () => {
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-scaling-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  const cluster = `weir-test-scaling-${randomBytes(4).toString('hex')}`;
  const member = (instance: string) => {
    const run = startClusterMember({
      cluster,
      storage,
      topics,
      interval: '500ms',
      env: { CJ_IDLENESS: '1s' },
      args: ['--instance-id', instance, '--keyed-tasks', String(KEYED_TASKS)],
    });
    cleanups.push(() => stopMember(run));
    return run;
  };
  const totals = async () => (await readJson<Total>(topics.totals)).length;
  const progress = async (more: number) => {
    const target = (await totals()) + more;
    await until(`${target} totals`, async () => ((await totals()) >= target ? true : undefined), 180_000);
  };
  const leave = async (run: WeirRun) => {
    run.child.kill('SIGTERM');
    await run.exited;
  };

  const input = steadyInput(topics.input, payment);
  const m1 = member('m1');
  await progress(1000);

  // 1 -> 3: the new members take tasks from m1, with their state.
  let m2 = member('m2');
  const m3 = member('m3');
  await Promise.all([m2, m3].map((run) => run.waitFor(/task \d+ started from checkpoint \d+/, 120_000)));
  await progress(1500);

  // 3 -> 2: m3 leaves; its tasks go to the others once its session times out (it is a static member).
  await leave(m3);
  await progress(1500);

  // A rolling restart: each member in turn stops and comes back under its instance id, getting its
  // tasks back (m1 with SIGTERM; m2 with SIGKILL, and back at once: static membership, no wait).
  let current = m1;
  for (const instance of ['m1', 'm2']) {
    if (instance === 'm1') await leave(current);
    else {
      m2.child.kill('SIGKILL');
      await m2.exited;
    }
    const back = member(instance);
    await back.waitFor(/task \d+ started from checkpoint \d+/, 120_000);
    if (instance === 'm1') current = back;
    else m2 = back;
    await progress(1000);
  }

  const produced = await input.stop();
  // The non-empty partitions' last records end event time up to them; the empty ones are idle.
  const last = closers(produced.length, [0, 1, 2, 3, 4, 5], BASE_TS + produced.length * 5 + 5000);
  await producePayments(topics.input, last);
  await auditClusterOutputs(topics, [...produced, ...last], produced);
  assert.ok(produced.length > 5000, `${produced.length} payments flowed through the scaling`);
  for (const run of [current, m2]) run.child.kill('SIGTERM');
  await Promise.all([current, m2].map((run) => Promise.race([run.exited, sleep(20_000)])));

  // The same input through one process (`weir run`, no --cluster): the same windows.
  const [single, singleWindows] = await Promise.all([
    createTestTopic(testBrokers(), 'cluster-single-totals', 3),
    createTestTopic(testBrokers(), 'cluster-single-windows', 3),
  ]);
  cleanups.push(single.remove, singleWindows.remove);
  const oneProcess = startWeirRun(
    [clusterJobModule, '--parallelism', '2', '--checkpoint-interval', '500ms', '--checkpoint-storage', join(storage, 'one-process'), '--no-ui'],
    {
      CJ_INPUT: topics.input,
      CJ_TOTALS: single.topic,
      CJ_WINDOWS: singleWindows.topic,
      CJ_IDLENESS: '1s',
      KAFKA_BROKERS: bootstrapList(testBrokers()).join(','),
    },
  );
  cleanups.push(() => stopMember(oneProcess));
  const clusterWindows = (await readJson<WindowSum>(topics.windows)).map((window) => JSON.stringify(window)).sort();
  await until(
    'the one process’s windows',
    async () => ((await readJson<WindowSum>(singleWindows.topic)).length >= clusterWindows.length ? true : undefined),
    180_000,
  ).catch(async (error: Error) => {
    // Seen once in CI (the cluster part exact, the one process short of windows): say what it did.
    const seen = (await readJson<WindowSum>(singleWindows.topic)).length;
    throw new Error(`${error.message}: ${seen} of ${clusterWindows.length} windows; the one process's stderr:\n${oneProcess.stderr().slice(-4000)}`, {
      cause: error,
    });
  });
  await sleep(2000);
  assert.deepEqual((await readJson<WindowSum>(singleWindows.topic)).map((window) => JSON.stringify(window)).sort(), clusterWindows);
  oneProcess.child.kill('SIGTERM');
  await Promise.race([oneProcess.exited, sleep(20_000)]);
});
