/**
 * Issue 35, point 2: savepoints of a cluster, against the real broker.
 * 1. `weir savepoint --cluster` takes one savepoint across every task while input flows; a member is
 *    SIGKILLed right after one of its tasks committed its part (the others take its tasks over,
 *    restoring parts with their channel skips, or taking theirs); `weir stop --cluster` takes
 *    another and every member leaves; a cluster that ran is refused a savepoint to start from; ONE
 *    process (`weir run --from-savepoint`, no --cluster) goes on from the stop's savepoint; another,
 *    into fresh outputs, from the first savepoint (taken while the cluster went on).
 * 2. One process stopped with a savepoint, then a new cluster of two members started from it.
 * 3. `weir stop --cluster --drain`: every window fires into the savepoint.
 * 4. A cluster on S3 stopped with a savepoint there, one process going on from it.
 * 5. A stop that times out (a member paused) is given up: the tasks it halted go on, exact.
 * Each audited read_committed across the cluster's and the process's transactions: every input in
 * the totals once with the right running total, every window once with the right sum.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payment, Total } from '../../fixtures/jobs/cluster-job.ts';
import { weir } from '../../harness/cli.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterBrokersEnv,
  clusterJobTopics,
  producePayments,
  readJson,
  startClusterMember,
  startJobProcess,
  stopMember,
  totalsAtLeast,
  withMemberLogs,
} from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, payment, steadyInput } from '../../harness/cluster-test.ts';
import { startS3Proxy } from '../../harness/s3-proxy.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

test('a cluster savepoint while input flows, a stop with a savepoint, and one process restoring it: exact', { timeout: 420_000 }, async () => {
  const { cluster, topics, storage, members, member } = await clusterTest('savepoint');
  const processStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-savepoint-one-'));
  cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 600 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    // Savepoint 1: every task of the second member fails right after it committed its part and
    // starts again from it (a task behind exchanges restores its channel skips); the third member
    // is SIGKILLed right after its first task committed its part: its tasks move to the others,
    // some restoring a part, some still to take theirs.
    const runs = [member(), member({ env: { WEIR_FAULT: 'savepoint-part:1:fail' } }), member({ env: { WEIR_FAULT: 'savepoint-part:1' } })];
    await runs[0]?.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, first.length);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(1500);

    const savepoint = await weir(['savepoint', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '90s'], clusterBrokersEnv());
    assert.equal(savepoint.code, 0, `weir savepoint --cluster failed:\n${savepoint.stderr}`);
    const [, id, path] = /savepoint (\d+): (\S+)/.exec(savepoint.stdout) ?? [];
    assert.ok(path !== undefined, `it prints the savepoint: ${savepoint.stdout}`);
    const metadata = JSON.parse(await readFile(join(path, '_metadata'), 'utf8')) as {
      kind: string;
      checkpointId: number;
      operators: { uid: string; parallelism: number; subtasks: { subtaskIndex: number }[] }[];
    };
    assert.equal(metadata.kind, 'savepoint');
    assert.equal(metadata.checkpointId, Number(id));
    const parallelismOf = Object.fromEntries(metadata.operators.map((operator) => [operator.uid, operator.parallelism]));
    assert.deepEqual(
      { payments: parallelismOf.payments, totals: parallelismOf.totals, windows: parallelismOf.windows },
      { payments: 12, totals: 12, windows: 12 },
    );
    assert.equal(metadata.operators.find((operator) => operator.uid === 'payments')?.subtasks.length, 12, 'every source task has its splits in it');

    await sleep(1500);
    const stop = await weir(['stop', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '90s'], clusterBrokersEnv());
    assert.equal(stop.code, 0, `weir stop --cluster failed:\n${stop.stderr}`);
    const [, , stopPath] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.ok(stopPath !== undefined, `it prints the savepoint: ${stop.stdout}`);
    assert.match(runs[2]?.stderr() ?? '', /WEIR_FAULT savepoint-part:1: killing the process/);
    assert.match(runs[1]?.stderr() ?? '', /(totals|windows) task \d+ failed \(WEIR_FAULT savepoint-part:1:fail: injected failure/);
    assert.match(runs[1]?.stderr() ?? '', /(totals|windows) task \d+: reads past the frames of \d+ channels already in its restored state/);
    const codes = await Promise.all(runs.slice(0, 2).map((run) => Promise.race([run.exited, sleep(30_000).then(() => 'still running')])));
    assert.deepEqual(codes, [0, 0], 'every member left by itself');
    const later = await input.stop();
    for (const run of runs) await stopMember(run);

    // A cluster that has run cannot start over from a savepoint: that is a new cluster id.
    const again = member({ args: ['--from-savepoint', stopPath] });
    assert.notEqual(await again.exited, 0);
    assert.match(again.stderr(), /cluster "[^"]+" has run already \(task \S+ has checkpoint \d+, not started from a savepoint\)/);
    assert.match(again.stderr(), /give --cluster a new id to start from the savepoint/);

    // One process goes on from the cluster's savepoint.
    const one = startJobProcess({ storage: processStorage, topics, interval: '500ms', args: ['--from-savepoint', stopPath] });
    members.push(one);
    cleanUpAfter(() => stopMember(one));
    const all = [...first, ...later];
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);

    // Savepoint 1, taken while the cluster went on, is a consistent cut too: one process from it,
    // into fresh outputs, goes on with every account's running total right from where its state was.
    const fresh = await clusterJobTopics();
    cleanUpAfter(fresh.remove);
    const firstStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-savepoint-first-'));
    cleanUpAfter(() => rm(firstStorage, { recursive: true, force: true }));
    const fromFirst = startJobProcess({
      storage: firstStorage,
      topics: { ...topics, totals: fresh.totals, windows: fresh.windows },
      interval: '500ms',
      args: ['--from-savepoint', path],
    });
    members.push(fromFirst);
    cleanUpAfter(() => stopMember(fromFirst));
    await auditRestoredTotals(fresh.totals, [...all, ...last]);
  });
});

/** Totals written from a savepoint on: per account, a suffix of its inputs (from the savepoint's offsets on), each once, each running total right. */
async function auditRestoredTotals(totalsTopic: string, inputs: readonly Payment[]): Promise<void> {
  const lastOf = new Map(inputs.map((entry) => [entry.account, entry.seq]));
  let totals: Total[] = [];
  await until(
    "every account's last input in the totals",
    async () => {
      totals = await readJson<Total>(totalsTopic);
      const seen = new Set(totals.map((total) => total.seq));
      return [...lastOf.values()].every((seq) => seen.has(seq)) ? true : undefined;
    },
    120_000,
  );
  const bySeq = new Map<number, Total>();
  for (const total of totals) {
    assert.equal(bySeq.has(total.seq), false, `seq ${total.seq} is in the restored totals twice`);
    bySeq.set(total.seq, total);
  }
  const running = new Map<string, number>();
  const started = new Set<string>();
  for (const entry of inputs) {
    const next = (running.get(entry.account) ?? 0) + entry.amount;
    running.set(entry.account, next);
    const total = bySeq.get(entry.seq);
    if (total === undefined) {
      assert.equal(started.has(entry.account), false, `seq ${entry.seq} of ${entry.account} is missing after the savepoint's offsets`);
      continue;
    }
    started.add(entry.account);
    assert.equal(total.total, next, `the running total of ${entry.account} at seq ${entry.seq}, restored`);
  }
}

test('one process stopped with a savepoint, then a cluster of two members started from it: exact', { timeout: 420_000 }, async () => {
  const { topics, members, member } = await clusterTest('from-savepoint');
  const processStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-from-savepoint-one-'));
  cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 600 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    const one = startJobProcess({ storage: processStorage, topics, interval: '500ms', ui: true });
    members.push(one);
    cleanUpAfter(() => stopMember(one));
    const url = await one.url();
    await totalsAtLeast(topics, first.length);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(1500);
    const stop = await weir(['stop', '--savepoint', '--url', url]);
    assert.equal(stop.code, 0, `weir stop --savepoint failed:\n${stop.stderr}`);
    const [, , path] = /stopped with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.ok(path !== undefined, `it prints the savepoint: ${stop.stdout}`);
    await one.exited;

    // A new cluster of two members goes on from one process's savepoint while input flows.
    const runs = [member({ args: ['--from-savepoint', path] }), member({ args: ['--from-savepoint', path] })];
    await runs[0]?.waitFor(/its tasks start from savepoint \d+/, 120_000);
    await runs[0]?.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await sleep(3000);
    const later = await input.stop();
    const all = [...first, ...later];
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
  });
});

test('weir stop --cluster --drain: the end of event time crosses the exchanges, so every window is in the savepoint', { timeout: 300_000 }, async () => {
  const { cluster, topics, storage, members, member } = await clusterTest('drain');
  // No --checkpoint-storage: the command finds it in the tasks' checkpoint records.
  await withMemberLogs(members, async () => {
    // No closers: only the drain's end of event time closes the last windows.
    const inputs = Array.from({ length: 800 }, (_, seq) => payment(seq));
    await producePayments(topics.input, inputs);
    const runs = [member(), member()];
    await runs[0]?.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, inputs.length);
    const stop = await weir(['stop', '--cluster', cluster, '--drain', '--timeout', '90s'], clusterBrokersEnv());
    assert.equal(stop.code, 0, `weir stop --cluster --drain failed:\n${stop.stderr}`);
    const [, , path] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.equal(path?.startsWith(join(storage, 'savepoints')), true, `the savepoint is in the cluster's storage: ${stop.stdout}`);
    const codes = await Promise.all(runs.map((run) => Promise.race([run.exited, sleep(30_000).then(() => 'still running')])));
    assert.deepEqual(codes, [0, 0], 'every member left by itself');
    await auditClusterOutputs(topics, inputs, inputs);
  });
});

test('the same on S3 (S3Proxy): a cluster stopped with a savepoint on S3, one process going on from it: exact', { timeout: 420_000 }, async () => {
  const server = await startS3Proxy();
  cleanUpAfter(() => server.stop());
  const bucket = `weir-cluster-sp-${randomBytes(4).toString('hex')}`;
  await server.createBucket(bucket);
  const storage = `s3://${bucket}/clusters`;
  const { cluster, topics, members } = await clusterTest('savepoint-s3');
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 600 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    const runs = [0, 1].map(() => startClusterMember({ cluster, storage, topics, interval: '1s', env: server.env }));
    for (const run of runs) {
      members.push(run);
      cleanUpAfter(() => stopMember(run));
    }
    await runs[0]?.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, first.length);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(2000);
    const stop = await weir(['stop', '--cluster', cluster, '--timeout', '90s'], { ...clusterBrokersEnv(), ...server.env });
    assert.equal(stop.code, 0, `weir stop --cluster failed:\n${stop.stderr}`);
    const [, , path] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.equal(path?.startsWith(`${storage}/savepoints/savepoint-`), true, `the savepoint is on S3: ${stop.stdout}`);
    const later = await input.stop();
    for (const run of runs) await stopMember(run);
    const processStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-savepoint-s3-one-'));
    cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
    const one = startJobProcess({ storage: processStorage, topics, interval: '500ms', args: ['--from-savepoint', path as string], env: server.env });
    members.push(one);
    cleanUpAfter(() => stopMember(one));
    const all = [...first, ...later];
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
  });
});

test('a stop that times out is given up: the tasks it halted go on, and the output stays exact', { timeout: 300_000 }, async () => {
  const { cluster, topics, members, member } = await clusterTest('stop-aborted');
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 600 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    // A session timeout the pause below stays well within: the paused member keeps its tasks.
    // One member after the other, so who holds what does not depend on which joined first: the first
    // holds all 36 tasks, then the sticky assignor leaves it tasks 0-17 (every source task: payments
    // 0-11, totals 0-5) and gives the second the rest (totals 6-11, windows 0-11).
    const runs = [member({ args: ['--session-timeout', '30s'] })];
    await runs[0]?.waitFor(/generation \d+, 36 tasks/, 120_000);
    runs.push(member({ args: ['--session-timeout', '30s'] }));
    // Both members hold tasks (the second's share started) before it is paused.
    const generation = async (run: WeirRun) => Number((await run.waitFor(/generation (\d+), 18 tasks/, 120_000))[1]);
    const [a, b] = await Promise.all(runs.map((run) => generation(run)));
    assert.equal(a, b, 'both members hold 18 tasks in one generation');
    await runs[1]?.waitFor(/(payments|totals|windows) task \d+ started/, 60_000);
    await totalsAtLeast(topics, first.length);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(2000);
    // The second member is paused (within its session timeout): its tasks take no part, so the stop
    // times out, while the first member's source tasks halt after theirs and its other tasks align.
    runs[1]?.child.kill('SIGSTOP');
    const stop = await weir(['stop', '--cluster', cluster, '--timeout', '4s'], clusterBrokersEnv());
    runs[1]?.child.kill('SIGCONT');
    assert.notEqual(stop.code, 0);
    assert.match(stop.stderr, /savepoint 1 of cluster "[^"]+" was not done in 4 s: \d+ of 36 tasks have not committed their part/);
    const halted = /payments task \d+: its part of savepoint 1 is committed \(checkpoint \d+\); it commits nothing more/;
    await until('a source task halted by the stop', async () => (runs.some((run) => halted.test(run.stderr())) ? true : undefined), 30_000);
    await until(
      'the halted tasks going on',
      async () => (runs.some((run) => /stopping savepoint 1 was given up after this task committed its part/.test(run.stderr())) ? true : undefined),
      30_000,
    );
    await sleep(2000);
    const later = await input.stop();
    const all = [...first, ...later];
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
    assert.deepEqual(
      runs.map((run) => run.child.exitCode),
      [null, null],
      'the members run on',
    );
  });
});
