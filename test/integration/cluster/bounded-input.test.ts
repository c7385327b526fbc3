/**
 * Issue 35, point 5: bounded input ends a cluster job, as it ends a job in one process. The job reads
 * a bounded Kafka source (bounded-cluster-job.ts: async I/O, keyBy into running totals, keyBy into
 * event-time windows, two exactly-once Kafka sinks). A source task whose split ended finishes its
 * operators (the async queue drained, every window fired by the end of event time), writes an END
 * frame into every exchange partition it writes and commits its final checkpoint record, `ended`;
 * a task behind exchanges ends once every upstream task's END came, and commits its own. Every
 * member leaves and exits 0 on its own once every task of the cluster has ended. Read back
 * read_committed, every input is in the totals once, and every window once (the last ones fired by
 * the end of input): also with a member SIGKILLed before the end, and one killed right after a task
 * committed its ended record (WEIR_FAULT=task-ended), whose ended tasks are not run again.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exitsOnItsOwn, latestTaskRecords } from '../../harness/bounded-cluster.ts';
import { auditClusterOutputs, producePayments, withMemberLogs } from '../../harness/cluster-job.ts';
import { type ClusterTest, clusterTest, payment } from '../../harness/cluster-test.ts';

const boundedJob = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'bounded-cluster-job.ts');
/** 12 source tasks, 12 async I/O tasks (a forward exchange: the source feeds two branches), 12 totals, 12 windows. */
const TASKS = 48;

/** Every task's latest committed checkpoint record says it ended. */
async function assertEveryTaskEnded(cluster: string): Promise<void> {
  const latest = await latestTaskRecords(cluster);
  assert.equal(latest.size, TASKS, 'every task has a checkpoint record');
  const notEnded = [...latest].filter(([, record]) => record.ended !== true).map(([key]) => key);
  assert.deepEqual(notEnded, [], 'every task’s latest record says ended');
}

async function scaffoldWithInput(name: string, count: number): Promise<{ scaffold: ClusterTest; inputs: ReturnType<typeof payment>[] }> {
  const scaffold = await clusterTest(name);
  const inputs = Array.from({ length: count }, (_, seq) => payment(seq));
  await producePayments(scaffold.topics.input, inputs);
  return { scaffold, inputs };
}

const member = (scaffold: ClusterTest, env: Record<string, string> = {}) => scaffold.member({ module: boundedJob, interval: '300ms', env });

test('a bounded cluster job ends: three members each exit 0 on their own, every output exactly once', { timeout: 300_000 }, async () => {
  const { scaffold, inputs } = await scaffoldWithInput('bounded', 3000);
  const runs = [member(scaffold), member(scaffold), member(scaffold)];
  await withMemberLogs(scaffold.members, async () => {
    for (const run of runs) assert.equal(await exitsOnItsOwn(run, 120_000), 0, 'the member exits 0');
    for (const run of runs) assert.match(run.stderr(), new RegExp(`every task of cluster "${scaffold.cluster}" ended: leaving`));
    await assertEveryTaskEnded(scaffold.cluster);
    await auditClusterOutputs(scaffold.topics, inputs, inputs);
  });
});

test('a bounded cluster job ends with a member SIGKILLed before the end and another started', { timeout: 300_000 }, async () => {
  const { scaffold, inputs } = await scaffoldWithInput('bounded-kill', 6000);
  // A slower lookup (2 in flight, 25 ms each: about 6 s per task), so the kill comes well before the end.
  const slow = { CJ_LOOKUP_MS: '25', CJ_LOOKUP_CAPACITY: '2' };
  const a = member(scaffold, slow);
  const b = member(scaffold, slow);
  await withMemberLogs(scaffold.members, async () => {
    await b.waitFor(/generation \d+, [1-9]\d* tasks/, 120_000);
    await sleep(1500);
    assert.doesNotMatch(a.stderr() + b.stderr(), /lookup task \d+ ended/, 'no lookup task has ended yet');
    b.child.kill('SIGKILL');
    await b.exited;
    const c = member(scaffold, slow);
    for (const run of [a, c]) assert.equal(await exitsOnItsOwn(run, 120_000), 0, 'the member exits 0');
    await assertEveryTaskEnded(scaffold.cluster);
    await auditClusterOutputs(scaffold.topics, inputs, inputs);
  });
});

test('a member killed right after a task committed its ended record: the task stays ended, the others finish, output exact', {
  timeout: 300_000,
}, async () => {
  const { scaffold, inputs } = await scaffoldWithInput('bounded-ended-kill', 3000);
  // A slower lookup (2 in flight, 10 ms each: about 1.3 s per task), so that the killed member's first ended task is
  // not the cluster's last one: its next owner must restore it and leave it ended (were it the last, every member
  // would see the cluster ended and leave without restoring anything, which is right but proves nothing here).
  const slow = { CJ_LOOKUP_MS: '10', CJ_LOOKUP_CAPACITY: '2' };
  const a = member(scaffold, { ...slow, WEIR_FAULT: 'task-ended:>=1' });
  const b = member(scaffold, slow);
  await withMemberLogs(scaffold.members, async () => {
    // WEIR_FAULT=task-ended: the member SIGKILLs itself once one of its tasks has committed its ended record.
    assert.equal(await exitsOnItsOwn(a, 120_000), null, 'the member killed itself');
    assert.equal(a.child.signalCode, 'SIGKILL');
    const bBefore = b.stderr().length;
    // What the killed member's log says it ended (its last lines may not have made it out before the SIGKILL).
    const endedByA = new Set([...a.stderr().matchAll(/(\w+ task \d+) ended: its final checkpoint/g)].map((m) => m[1] as string));
    const c = member(scaffold, slow);
    for (const run of [b, c]) assert.equal(await exitsOnItsOwn(run, 120_000), 0, 'the member exits 0');
    // The tasks whose ended records the killed member committed went to the others, which did not run them again.
    const after = b.stderr().slice(bBefore) + c.stderr();
    assert.match(after, /stays ended/);
    for (const task of endedByA) {
      assert.doesNotMatch(after, new RegExp(`${task} (started|restored)`), `${task} ended on the killed member and does not run again`);
    }
    await assertEveryTaskEnded(scaffold.cluster);
    await auditClusterOutputs(scaffold.topics, inputs, inputs);
  });
});
