/** The Kafka job, exactly-once, on brokers formatted with transaction.version 1 and 2, with one kill in between. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

for (const transactionVersion of [1, 2] as const) {
  test(`transaction.version=${transactionVersion}: crash between checkpoint complete and commit, resume, exact output`, async () => {
    const brokers = testBrokers(transactionVersion);
    const input = await createTestTopic(brokers, `tv${transactionVersion}-in`, 2);
    const output = await createTestTopic(brokers, `tv${transactionVersion}-out`, 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-tv-'));
    try {
      await writeChaosInput(brokers, input.topic, 2, 10_000);
      const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '50' };
      const config = { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') } };
      const crashed = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=2' });
      assert.equal((await crashed.exit).signal, 'SIGKILL', crashed.stderr);
      const resumed = startJobProcess(jobModule, config, env);
      assert.equal((await resumed.exit).code, 0, resumed.stderr);
      assert.deepEqual(await auditCounts(brokers, output.topic, 10_000), exactCountAudit(10_000));
    } finally {
      await input.remove();
      await output.remove();
      await rm(folder, { recursive: true, force: true });
    }
  });
}
