/**
 * The group coordinator of a broker that is not ready, on brokers of this test's own. A broker
 * that has just started has no __consumer_offsets yet: its first FindCoordinator answers
 * COORDINATOR_NOT_AVAILABLE (it creates the topic), then COORDINATOR_LOAD_IN_PROGRESS while it loads.
 * `weir doctor --cluster <id> --job` and `weir cluster status` wait for it and answer, and a member
 * started then joins and runs its tasks. A broker
 * whose coordinator never comes (offsets.topic.replication.factor above its one broker) ends in one
 * clear error naming the broker and what to check, after a bounded wait: not an internal error.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { type BrokerState, startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { weir } from '../../harness/cli.ts';
import { clusterJobModule } from '../../harness/cluster-job.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { startWeirRun } from '../../harness/weir-run.ts';

let folder: string;
let fresh: BrokerState;
let broken: BrokerState;
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'weir-coordinator-'));
  const [a, b, c, d] = (await freePorts(4)) as [number, number, number, number];
  [fresh, broken] = await Promise.all([
    startLocalBroker({ dataDir: join(folder, 'fresh'), port: a, controllerPort: b, heapMb: 384, wipe: true }),
    startLocalBroker({
      dataDir: join(folder, 'broken'),
      port: c,
      controllerPort: d,
      heapMb: 384,
      wipe: true,
      overrides: { 'offsets.topic.replication.factor': '3' },
    }),
  ]);
});
after(async () => {
  await Promise.all([stopLocalBroker({ dataDir: join(folder, 'fresh') }), stopLocalBroker({ dataDir: join(folder, 'broken') })]).catch(() => {});
  await rm(folder, { recursive: true, force: true });
});

const jobEnv = (broker: BrokerState, input: string) => ({
  KAFKA_BROKERS: formatBootstrap([{ host: broker.host, port: broker.port }]),
  CJ_INPUT: input,
  CJ_TOTALS: 'unused-totals',
  CJ_WINDOWS: 'unused-windows',
});

test('weir doctor --cluster --job, weir cluster status and a member against a freshly started broker wait for its group coordinator', {
  timeout: 180_000,
}, async () => {
  const brokers = [{ host: fresh.host, port: fresh.port }];
  // The job's topics (the input gives its task count); creating topics leaves __consumer_offsets uncreated.
  const [input, totals, windows] = await Promise.all(
    ['coordinator-in', 'coordinator-totals', 'coordinator-windows'].map((name) => createTestTopic(brokers, name, 3)),
  );
  const cluster = `weir-test-loading-${randomBytes(4).toString('hex')}`;
  const env = {
    ...jobEnv(fresh, (input as { topic: string }).topic),
    CJ_TOTALS: (totals as { topic: string }).topic,
    CJ_WINDOWS: (windows as { topic: string }).topic,
  };
  const member = startWeirRun(
    [
      clusterJobModule,
      '--cluster',
      `${cluster}-member`,
      '--checkpoint-interval',
      '500ms',
      '--checkpoint-storage',
      join(folder, 'member'),
      '--session-timeout',
      '6s',
      '--no-ui',
    ],
    env,
  );
  after(async () => {
    member.child.kill('SIGKILL');
    await member.exited;
  });
  const [doctor, status] = await Promise.all([
    weir(['doctor', '--cluster', cluster, '--job', clusterJobModule], env),
    weir(['cluster', 'status', cluster], env),
  ]);
  // The member joined its group once the coordinator was there, and runs every task.
  await member.waitFor(/generation \d+, \d+ tasks/, 120_000);
  assert.doesNotMatch(member.stderr(), /internal error|AggregateError/, member.stderr());
  assert.doesNotMatch(doctor.stderr, /internal error|AggregateError/, doctor.stderr);
  assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
  assert.match(doctor.stdout, new RegExp(`cluster "${cluster}": group \\w+, 0 members`));
  assert.match(doctor.stdout, /missing \(the first member to start creates it\)/);
  assert.doesNotMatch(status.stderr, /internal error|AggregateError/, status.stderr);
  assert.equal(status.code, 0, status.stdout + status.stderr);
  assert.match(status.stdout, new RegExp(`cluster "${cluster}": group \\w+, generation -, 0 members`));
});

test('a group coordinator that never comes: one clear error naming the broker and what to check', { timeout: 180_000 }, async () => {
  const brokers = [{ host: broken.host, port: broken.port }];
  const input = (await createTestTopic(brokers, 'coordinator-in', 3)).topic;
  const doctor = await weir(['doctor', '--cluster', 'weir-test-never', '--job', clusterJobModule], jobEnv(broken, input));
  assert.equal(doctor.code, 1, doctor.stdout + doctor.stderr);
  assert.doesNotMatch(doctor.stderr, /internal error|AggregateError|\n\s+at /, doctor.stderr);
  assert.match(
    doctor.stderr,
    new RegExp(`no group coordinator for "weir-test-never" after 30 s \\(last: COORDINATOR_NOT_AVAILABLE from broker ${broken.host}:${broken.port}\\)`),
  );
  assert.match(doctor.stderr, /offsets\.topic\.replication\.factor/);
});
