/**
 * Cluster mode end to end on the real broker: `weir run --cluster` members share one job (a
 * 12-partition input, keyBy into keyed running totals, keyBy into event-time windows, two
 * exactly-once Kafka outputs) while input flows and members fail:
 *   three members start; one is SIGKILLed (its tasks move after the session timeout); one is
 *   paused (SIGSTOP) past its session timeout, so the other takes its tasks, then woken (SIGCONT):
 *   it is fenced and rejoins; a fourth member joins (state moves with the tasks it takes).
 * Then everything is read back read_committed: every input exactly once in the totals, every
 * running total right (keyed state survived every move), every event-time window downstream of
 * the exchange exactly once with the right sum and count. Once with the state in a folder every
 * member shares, once on S3 (S3Proxy, a real S3-compatible server started here).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import type { Payment, Total, WindowSum } from '../../fixtures/jobs/cluster-job.ts';
import { bootstrapList, createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { startS3Proxy } from '../../harness/s3-proxy.ts';
import { startWeirRun, until, type WeirRun } from '../../harness/weir-run.ts';

const brokers = testBrokers();
const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'cluster-job.ts');
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

const BASE = 1_700_000_000_000;
const ACCOUNTS = 40;
const payment = (seq: number): Payment => ({ seq, account: `a${seq % ACCOUNTS}`, amount: (seq % 7) + 1, ts: BASE + seq * 5 });
/** An account's partition of the 12: records of one account stay in order in one partition. */
const partitionOf = (account: string) => Number(account.slice(1)) % 12;

async function produce(topic: string, payments: Payment[]): Promise<void> {
  const connections = new ClusterConnections(brokers);
  try {
    await new PlainProducer(connections).send(
      payments.map((entry) => ({ topic, partition: partitionOf(entry.account), key: Buffer.from(entry.account), value: Buffer.from(JSON.stringify(entry)) })),
      -1,
    );
  } finally {
    await connections.close();
  }
}

const read = async <T>(topic: string): Promise<T[]> => (await readTopic({ bootstrap: brokers, topic })).map((record) => JSON.parse(String(record.value)) as T);

/** The whole story on one checkpoint storage (a folder every member shares, or S3): `env` is what the members need to reach it. */
async function clusterStory(storage: string, env: Record<string, string>, interval: string): Promise<void> {
  const [input, totals, windows] = await Promise.all([
    createTestTopic(brokers, 'cluster-in', 12),
    createTestTopic(brokers, 'cluster-totals', 3),
    createTestTopic(brokers, 'cluster-windows', 3),
  ]);
  for (const topic of [input, totals, windows]) cleanups.push(topic.remove);
  const cluster = `weir-test-cluster-${randomBytes(4).toString('hex')}`;
  const members: WeirRun[] = [];
  const member = () => {
    const run = startWeirRun(
      [job, '--cluster', cluster, '--checkpoint-interval', interval, '--checkpoint-storage', storage, '--session-timeout', '6s', '--no-ui'],
      { ...env, CJ_INPUT: input.topic, CJ_TOTALS: totals.topic, CJ_WINDOWS: windows.topic, KAFKA_BROKERS: bootstrapList(brokers).join(',') },
    );
    members.push(run);
    cleanups.push(async () => {
      run.child.kill('SIGCONT');
      run.child.kill('SIGKILL');
      await run.exited;
    });
    return run;
  };
  const totalsAtLeast = (count: number) =>
    until(`${count} totals`, async () => ((await read<Total>(totals.topic)).length >= count ? true : undefined), 180_000);

  const all: Payment[] = Array.from({ length: 12_000 }, (_, seq) => payment(seq));
  await produce(input.topic, all.slice(0, 3000));
  const [a, b] = [member(), member(), member()] as [WeirRun, WeirRun, WeirRun];
  await totalsAtLeast(1000);

  // A member dies: after the session timeout the others take its tasks over from their checkpoints.
  a.child.kill('SIGKILL');
  await produce(input.topic, all.slice(3000, 6000));
  await totalsAtLeast(5000);

  // A zombie: paused past its session timeout, its tasks move; woken, it is fenced and rejoins.
  b.child.kill('SIGSTOP');
  await sleep(9000);
  await produce(input.topic, all.slice(6000, 9000));
  await totalsAtLeast(7500);
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
  member();
  await produce(input.topic, all.slice(9000));
  // Every partition's last record ends event time up to it: every window of the input closes.
  const closers = Array.from({ length: 12 }, (_, p) => ({ seq: 12_000 + p, account: `a${p}`, amount: 1, ts: BASE + 12_000 * 5 + 5000 }));
  await produce(input.topic, closers);
  const expectedWindows = new Map<string, { sum: number; count: number }>();
  for (const entry of all) {
    const key = `${entry.account}@${entry.ts - (entry.ts % 1000)}`;
    const window = expectedWindows.get(key) ?? { sum: 0, count: 0 };
    window.sum += entry.amount;
    window.count++;
    expectedWindows.set(key, window);
  }
  await totalsAtLeast(all.length + closers.length);
  await until('every window', async () => ((await read<WindowSum>(windows.topic)).length >= expectedWindows.size ? true : undefined), 180_000);
  await sleep(3000); // anything a member still commits would show now
  for (const run of members) run.child.kill('SIGTERM');
  await Promise.all(members.map((run) => Promise.race([run.exited, sleep(20_000)])));

  // Tasks moved with their state: new owners started from the checkpoints their old owners committed.
  assert.match(members.map((run) => run.stderr()).join('\n'), /task \d+ started from checkpoint \d+/);

  // The audit, read_committed.
  const totalRecords = await read<Total>(totals.topic);
  const bySeq = new Map<number, Total>();
  for (const record of totalRecords) {
    assert.equal(bySeq.has(record.seq), false, `seq ${record.seq} is in the totals twice`);
    bySeq.set(record.seq, record);
  }
  const inputs = [...all, ...closers];
  assert.equal(bySeq.size, inputs.length, 'every input is in the totals once');
  const running = new Map<string, number>();
  for (const entry of inputs) {
    const next = (running.get(entry.account) ?? 0) + entry.amount;
    running.set(entry.account, next);
    assert.equal(bySeq.get(entry.seq)?.total, next, `the running total of ${entry.account} at seq ${entry.seq}`);
  }
  const windowRecords = await read<WindowSum>(windows.topic);
  const seen = new Set<string>();
  for (const record of windowRecords) {
    const key = `${record.account}@${record.start}`;
    assert.equal(seen.has(key), false, `window ${key} was emitted twice`);
    seen.add(key);
    assert.deepEqual({ sum: record.sum, count: record.count }, expectedWindows.get(key), `window ${key}`);
  }
  assert.equal(seen.size, expectedWindows.size, 'every window of the input, once');
}

test('three members share a keyed, windowed job; a member killed, a zombie fenced, a member added: every output exact', { timeout: 600_000 }, async () => {
  const storage = await mkdtemp(join(tmpdir(), 'weir-cluster-'));
  cleanups.push(() => rm(storage, { recursive: true, force: true }));
  await clusterStory(storage, {}, '500ms');
});

test('the same with the tasks’ state on S3 (S3Proxy): a member killed, a zombie fenced, a member added: every output exact', { timeout: 600_000 }, async () => {
  const server = await startS3Proxy();
  cleanups.push(() => server.stop());
  const bucket = `weir-cluster-${randomBytes(4).toString('hex')}`;
  await server.createBucket(bucket);
  await clusterStory(`s3://${bucket}/clusters`, server.env, '1s');
});
