/**
 * reinterpretAsKeyedStream in cluster mode, against the real broker: a bounded topic of 8
 * partitions whose partition p holds key group p, read by a job of maxParallelism 8 whose keyed
 * running count follows the source with no exchange (test/fixtures/jobs/kafka-count-job.ts with
 * KC_REINTERPRET=1): the source stage has 8 tasks, task p owns key group p. Two members, one
 * SIGKILLed as soon as one of its tasks committed a checkpoint, and another started (the killed
 * member's tasks restore their own partition and key group from their own records); every member leaves once every task ended. The output, read back read_committed, has every
 * input once with exact counts. A topic of another partition count is refused by name at the start.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { keyGroupOf } from '../../../src/connectors/kafka/key-group-partitioner.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { startWeirRun, type WeirRun } from '../../harness/weir-run.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

async function setUp(label: string, partitions: number, count: number, workMicros = 200) {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, `reinterpret-cluster-in-${label}`, partitions);
  const output = await createTestTopic(brokers, `reinterpret-cluster-out-${label}`, 4);
  const folder = await mkdtemp(join(tmpdir(), 'weir-reinterpret-cluster-'));
  cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
  await writeChaosInput(brokers, input.topic, partitions, count, (_seq, key) => keyGroupOf(key, partitions));
  const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: String(workMicros), KC_REINTERPRET: '1' };
  const cluster = `weir-test-reinterpret-${label}-${randomBytes(4).toString('hex')}`;
  const member = (extra: NodeJS.ProcessEnv = {}): WeirRun => {
    const run = startWeirRun(
      [
        jobModule,
        '--cluster',
        cluster,
        '--max-parallelism',
        '8',
        '--checkpoint-interval',
        '300ms',
        '--checkpoint-storage',
        folder,
        '--session-timeout',
        '6s',
        '--no-ui',
      ],
      { ...env, ...extra },
    );
    cleanups.push(async () => {
      run.child.kill('SIGKILL');
      await run.exited;
    });
    return run;
  };
  return { brokers, output, member };
}

test('a source reinterpreted as keyed runs in cluster mode: task p owns partition p and key group p; a member SIGKILLed; exact counts', {
  timeout: 300_000,
}, async () => {
  const count = 30_000;
  // 400 µs of work a record, 3,750 records a task: each task reads for seconds. The second member
  // kills itself (SIGKILL) as soon as a task of its run committed a checkpoint (WEIR_FAULT at the
  // sweep after a run's first commit), so that task's next owner restores it from its own record.
  const { brokers, output, member } = await setUp('exact', 8, count, 400);
  const first = member();
  await first.waitFor(/generation \d+, \d+ tasks/, 120_000);
  const second = member({ WEIR_FAULT: 'owner-sweep:>=1' });
  assert.equal(await second.exited, null, `the second member was to kill itself:\n${second.stderr()}`);
  const third = member();
  const codes = await Promise.all([first.exited, third.exited]);
  assert.deepEqual(codes, [0, 0], `${first.stderr()}\n${third.stderr()}`);
  assert.match(`${first.stderr()}${third.stderr()}`, /every task of cluster "[^"]+" ended: leaving/);
  assert.match(`${first.stderr()}${third.stderr()}`, /input task \d+ started from checkpoint/, 'no task restored a checkpoint of the killed member');
  assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
});

test('a reinterpreted source whose partitions are not maxParallelism is refused by name at the start', { timeout: 120_000 }, async () => {
  const { member } = await setUp('refused', 6, 100);
  const run = member();
  assert.equal(await run.exited, 1);
  assert.match(
    run.stderr(),
    /source "[^"]+" is reinterpreted as keyed, so its partition p must hold key group p, but it has 6 partitions for the job's maxParallelism of 8/,
  );
  assert.match(run.stderr(), /give the job maxParallelism 6/);
});
