/**
 * Issue 35, points 1-3 and 5: a bounded cluster job into a two-phase-commit sink, on the real broker.
 * The job (bounded-cluster-job.ts with CJ_FILE_OUT) writes its running totals both into an exactly-once
 * Kafka sink and into a file sink, and its windows into Kafka. A totals task's final checkpoint
 * record says `ended` with `sinkCommit: pending` (it holds the file sink's last committables, as every
 * record does); once the sink committed them, a second record says `committed`; the cluster ends
 * (every member leaves, exit 0) only once every such task's record says so. A member killed right
 * after a totals task committed its ended record and before its sink's commit
 * (WEIR_FAULT=ended-sink-commit) leaves that task `pending`: its next owner does not run it, but
 * opens its chain (the file sink's restore commits the pending files again) and commits the record
 * `committed`. The committed files read back hold every input exactly once, every running total
 * right, and the Kafka outputs read back read_committed are exact.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { exitsOnItsOwn, latestTaskRecords } from '../../harness/bounded-cluster.ts';
import { auditClusterOutputs, producePayments, withMemberLogs } from '../../harness/cluster-job.ts';
import { auditTotals, committedFileTotals } from '../../harness/cluster-sink-audit.ts';
import { type ClusterTest, cleanUpAfter, clusterTest, payment } from '../../harness/cluster-test.ts';

const boundedJob = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'bounded-cluster-job.ts');
/** 12 source tasks, 12 async I/O tasks, 12 totals, 12 of each totals sink (the totals feed two sinks: a stage each), 12 windows. */
const TASKS = 72;

/** Every task ended, and every totals task's sink committed its final committables (its record says so). */
async function assertEveryTaskEndedAndCommitted(cluster: string): Promise<void> {
  const latest = await latestTaskRecords(cluster);
  assert.equal(latest.size, TASKS, 'every task has a checkpoint record');
  assert.deepEqual(
    [...latest].filter(([, record]) => record.ended !== true).map(([key]) => key),
    [],
    'every task’s latest record says ended',
  );
  const sinkTasks = [...latest].filter(([, record]) => record.sinkCommit !== undefined);
  assert.equal(sinkTasks.length, 12, 'the 12 tasks of the file sink’s stage');
  assert.deepEqual(
    sinkTasks.filter(([, record]) => record.sinkCommit !== 'committed').map(([key]) => key),
    [],
    'every file sink task’s record says its sink committed its final committables',
  );
}

async function scaffold(name: string, count: number): Promise<{ scaffold: ClusterTest; inputs: ReturnType<typeof payment>[]; output: string }> {
  const test = await clusterTest(name);
  const output = await mkdtemp(join(tmpdir(), `weir-${name}-files-`));
  cleanUpAfter(() => rm(output, { recursive: true, force: true }));
  const inputs = Array.from({ length: count }, (_, seq) => payment(seq));
  await producePayments(test.topics.input, inputs);
  return { scaffold: test, inputs, output };
}

test('a bounded cluster job into a two-phase-commit sink ends: three members exit 0, the files and the Kafka outputs exact', { timeout: 300_000 }, async () => {
  const { scaffold: cluster, inputs, output } = await scaffold('bounded-2pc', 3000);
  const member = () => cluster.member({ module: boundedJob, interval: '300ms', env: { CJ_FILE_OUT: output } });
  const runs = [member(), member(), member()];
  await withMemberLogs(cluster.members, async () => {
    for (const run of runs) assert.equal(await exitsOnItsOwn(run, 120_000), 0, 'the member exits 0');
    await assertEveryTaskEndedAndCommitted(cluster.cluster);
    auditTotals(inputs, committedFileTotals(output));
    await auditClusterOutputs(cluster.topics, inputs, inputs);
  });
});

test('a member killed after a task committed its ended record, before its sink committed: the next owner commits, every output exact', {
  timeout: 300_000,
}, async () => {
  const { scaffold: cluster, inputs, output } = await scaffold('bounded-2pc-kill', 3000);
  // A slower lookup (2 in flight, 10 ms each), so that the kill comes while other tasks still run.
  const env = { CJ_FILE_OUT: output, CJ_LOOKUP_MS: '10', CJ_LOOKUP_CAPACITY: '2' };
  // One member alone first (it runs every task), so that the fault surely comes on it; two more once it died.
  const a = cluster.member({ module: boundedJob, interval: '300ms', env: { ...env, WEIR_FAULT: 'ended-sink-commit:>=1' } });
  await withMemberLogs(cluster.members, async () => {
    // WEIR_FAULT=ended-sink-commit: the member SIGKILLs itself once a file sink task committed its ended record, before the sink's commit.
    assert.equal(await exitsOnItsOwn(a, 120_000), null, 'the member killed itself');
    assert.equal(a.child.signalCode, 'SIGKILL');
    const killedAt = /killing the process at ended-sink-commit of checkpoint (\d+) \((totals-file-sink task \d+)\)/.exec(a.stderr());
    assert.ok(killedAt !== null, 'the member died between a file sink task’s ended record and its sink’s commit');
    const [, checkpoint, task] = killedAt as unknown as [string, string, string];
    assert.doesNotMatch(a.stderr(), /every task of cluster "[^"]+" ended/, 'the cluster had not ended');
    // Its final part file waits in .pending/, pre-committed, named by the committed record only.
    const pendingFiles = await readdir(join(output, '.pending')).catch(() => []);
    assert.ok(pendingFiles.length > 0, 'the killed task’s final part file is pending, not committed');
    const b = cluster.member({ module: boundedJob, interval: '300ms', env });
    const c = cluster.member({ module: boundedJob, interval: '300ms', env });
    for (const run of [b, c]) assert.equal(await exitsOnItsOwn(run, 120_000), 0, 'the member exits 0');
    // The task's next owner did not run it: it committed the record's committables again, then its record says committed.
    const after = b.stderr() + c.stderr();
    assert.match(after, new RegExp(`${task}: its sinks committed the committables of its final checkpoint ${checkpoint} again \\(restored\\): it stays ended`));
    assert.doesNotMatch(after, new RegExp(`${task} started`), `${task} does not run again`);
    await assertEveryTaskEndedAndCommitted(cluster.cluster);
    auditTotals(inputs, committedFileTotals(output));
    await auditClusterOutputs(cluster.topics, inputs, inputs);
  });
});
