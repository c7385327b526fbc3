/**
 * SIGTERM cancels a job run by `weir run` (Flink's cancel): it exits 0 after its tasks closed and
 * its sinks aborted their open transactions, and the next run resumes from the latest checkpoint
 * with every record exactly once.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { startWeirRun } from '../../harness/weir-run.ts';

test('SIGTERM cancels the job cleanly; the next run resumes and the output is exact', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'cancel-in', 2);
  const output = await createTestTopic(brokers, 'cancel-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-cancel-'));
  const count = 60_000;
  try {
    await writeChaosInput(brokers, input.topic, 2, count);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '100' };
    const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'kafka-count-job.ts');
    const args = [
      job,
      '--log-level',
      'debug',
      '--parallelism',
      '2',
      '--workers',
      '2',
      '--checkpoint-interval',
      '300ms',
      '--checkpoint-storage',
      join(folder, 'checkpoints'),
      '--no-ui',
    ];

    const first = startWeirRun(args, env);
    await first.waitFor(/checkpoint \d+ completed/);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0, first.stderr());
    assert.match(first.stderr(), /^\[[\d:.]+\] INFO: SIGTERM: cancelling the job/m);
    assert.match(first.stdout(), /^job "kafka-count" cancelled after [\d.]+s: \d+ checkpoints, 0 restarts, last checkpoint \d+$/m);
    assert.doesNotMatch(first.stderr(), /WORKER_EXITED|job failed/);

    const second = startWeirRun(args, env);
    await second.waitFor(/starting job "kafka-count" from checkpoint \d+/);
    assert.equal(await second.exited, 0, second.stderr());
    assert.match(second.stdout(), /^job "kafka-count" finished in /m);
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  } finally {
    await input.remove();
    await output.remove();
    await rm(folder, { recursive: true, force: true });
  }
});
