/**
 * Cluster mode end to end on the real broker: `weir run --cluster` members share one job (a
 * 12-partition input, keyBy into keyed running totals, keyBy into event-time windows, two
 * exactly-once Kafka outputs) while input flows and members fail:
 *   three members start; one is SIGKILLed (its tasks move after the session timeout); one is
 *   paused (SIGSTOP) past its session timeout, so the other takes its tasks, then woken (SIGCONT):
 *   it is out of the group, gives its tasks up, is fenced and rejoins; a fourth member joins
 *   (state moves with the tasks it takes).
 * Then everything is read back read_committed: every input exactly once in the totals, every
 * running total right (keyed state survived every move), every event-time window downstream of
 * the exchange exactly once with the right sum and count. Once with the state in a folder every
 * member shares, once on S3 (S3Proxy, a real S3-compatible server started here).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClusterStatus, readClusterStatus } from '../../../src/cluster/cluster-status.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import { weir } from '../../harness/cli.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterJobModule,
  clusterJobTopics,
  producePayments,
  startClusterMember,
  stopMember,
  totalsAtLeast,
  withMemberLogs,
} from '../../harness/cluster-job.ts';
import { bootstrapList, testBrokers } from '../../harness/kafka.ts';
import { startS3Proxy } from '../../harness/s3-proxy.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

/** The cluster as Kafka holds it (what `weir cluster status` prints). */
async function clusterView(cluster: string): Promise<ClusterStatus> {
  const brokers = testBrokers();
  const connections = new ClusterConnections(brokers);
  try {
    return await readClusterStatus(connections, brokers, cluster);
  } finally {
    await connections.close();
  }
}

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

/** The whole story on one checkpoint storage (a folder every member shares, or S3): `env` is what the members need to reach it. */
async function clusterStory(storage: string, env: Record<string, string>, interval: string): Promise<void> {
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const cluster = `weir-test-cluster-${randomBytes(4).toString('hex')}`;
  const members: WeirRun[] = [];
  const member = (ui = false) => {
    const run = startClusterMember({ cluster, storage, topics, interval, env, ui });
    members.push(run);
    cleanups.push(() => stopMember(run));
    return run;
  };

  await withMemberLogs(members, async () => {
    const all: Payment[] = Array.from({ length: 12_000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, all.slice(0, 3000));
    const three = [member(), member(), member()] as [WeirRun, WeirRun, WeirRun];
    const [a, b] = three;
    // All three own tasks, and the job is under way.
    await Promise.all(three.map((run) => run.waitFor(/generation \d+, \d+ tasks/, 120_000)));
    await until('the three members to share the tasks', async () => ((await clusterView(cluster)).members.length === 3 ? true : undefined), 120_000);
    await totalsAtLeast(topics, 1000);

    // A member dies: after the session timeout the others take its tasks over from their checkpoints.
    a.child.kill('SIGKILL');
    await producePayments(topics.input, all.slice(3000, 6000));
    await totalsAtLeast(topics, 5000);

    // A zombie: paused past its session timeout, its tasks move; woken, it is fenced and rejoins.
    b.child.kill('SIGSTOP');
    await sleep(9000);
    await producePayments(topics.input, all.slice(6000, 9000));
    await totalsAtLeast(topics, 7500);
    b.child.kill('SIGCONT');
    // It learns it is out of the group (or a commit of its tasks is fenced first), gives its tasks up, and joins again.
    await b.waitFor(/out of the group|was fenced/, 60_000);
    await until(
      'the zombie to rejoin',
      async () =>
        b
          .stderr()
          .split(/out of the group|was fenced/)
          .at(-1)
          ?.match(/generation \d+, \d+ tasks/)
          ? true
          : undefined,
      60_000,
    );

    // A member joins: it takes tasks, with their state, from the others.
    const d = member(true);
    await producePayments(topics.input, all.slice(9000));
    // Every partition's last record ends event time up to it: every window of the input closes.
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);

    // Tasks moved with their state: new owners started from the checkpoints their old owners committed.
    assert.match(members.map((run) => run.stderr()).join('\n'), /task \d+ started from checkpoint \d+/);
    // `weir cluster status`, from Kafka alone: the three members, every task owned once and checkpointed, the input all read.
    // Read once the group is stable and every member's tasks are named: one read in CI, taken while the
    // group still settled, named the tasks by number only ("task 7", the status's fallback when no
    // member's metadata Kafka returned names them).
    const view = await until(
      'a stable cluster status',
      async () => {
        const status = await weir(['cluster', 'status', cluster, '--json'], { KAFKA_BROKERS: bootstrapList(testBrokers()).join(',') });
        assert.equal(status.code, 0, status.stderr);
        const read = JSON.parse(status.stdout) as ClusterStatus;
        return read.state === 'Stable' && read.members.flatMap((entry) => entry.tasks).every((name) => name.includes('/')) ? read : undefined;
      },
      60_000,
    );
    assert.equal(view.members.length, 3);
    assert.equal(view.tasks.length, 36);
    assert.deepEqual(view.members.flatMap((entry) => entry.tasks).sort(), view.tasks.map((task) => task.name).sort());
    for (const task of view.tasks) {
      assert.ok(task.checkpointId !== undefined && task.owner !== undefined, `${task.name} is owned and checkpointed`);
      if (task.name.startsWith('payments/')) assert.equal(task.lag, 0, `${task.name} has read all its input`);
    }
    // The new member's dashboard: its own tasks as the job's subtasks, and the cluster view.
    const url = await d.url();
    const seen = (await (await fetch(`${url}/api/cluster`)).json()) as ClusterStatus;
    assert.equal(seen.members.length, 3);
    // Its task threads report their tasks' metrics every second: the first report may still be on its way.
    await until(
      'the member shows its tasks as subtasks',
      async () => {
        const mine = (await (await fetch(`${url}/api/job`)).json()) as { state: string; vertices: { subtasks: unknown[] }[] };
        return mine.state === 'running' && mine.vertices.reduce((sum, vertex) => sum + vertex.subtasks.length, 0) > 0 ? true : undefined;
      },
      15_000,
    );
    assert.match(await (await fetch(`${url}/`)).text(), /id="cluster-section"/);

    // `weir doctor --cluster` with the job: its stages and topics as the plan needs them.
    const jobEnv = { KAFKA_BROKERS: bootstrapList(testBrokers()).join(','), CJ_INPUT: topics.input, CJ_TOTALS: topics.totals, CJ_WINDOWS: topics.windows };
    const doctor = await weir(['doctor', '--cluster', cluster, '--job', clusterJobModule], jobEnv);
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, /group Stable, 3 members, 36 of 36 tasks checkpointed/);
    assert.equal(doctor.stdout.match(/partitions: ok/g)?.length, 3, doctor.stdout);
    for (const run of members) run.child.kill('SIGTERM');
    await Promise.all(members.map((run) => Promise.race([run.exited, sleep(20_000)])));
  });
}

test('three members share a keyed, windowed job; a member killed, a zombie fenced, a member added: every output exact', { timeout: 600_000 }, async () => {
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  await clusterStory(storage, {}, '500ms');
  // A task's new owner deletes what its previous owners left: per task, the current owner's
  // checkpoints, and at most one folder more (a zombie's write after it was cleaned up).
  const tasksFolder = join(storage, 'tasks');
  for (const task of await readdir(tasksFolder)) {
    const owners = await readdir(join(tasksFolder, task));
    const holding = [];
    for (const owner of owners) if ((await readdir(join(tasksFolder, task, owner))).some((name) => name.startsWith('chk-'))) holding.push(owner);
    assert.ok(holding.length <= 2, `task ${task}: checkpoints left by ${holding.join(', ')}`);
  }
});

test('the same with the tasks’ state on S3 (S3Proxy): a member killed, a zombie fenced, a member added: every output exact', { timeout: 600_000 }, async () => {
  const server = await startS3Proxy();
  cleanups.push(() => server.stop());
  const bucket = `weir-cluster-${randomBytes(4).toString('hex')}`;
  await server.createBucket(bucket);
  await clusterStory(`s3://${bucket}/clusters`, server.env, '1s');
});
