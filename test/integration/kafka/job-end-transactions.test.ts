/**
 * No transaction outlives its job. A job that fails for good, or is cancelled while it waits to
 * restart, has no tasks left to finish its transactions; the job master does it from the latest
 * completed checkpoint, as a start from it would: the transactions that checkpoint holds are
 * committed, every other one of the sink's ids is aborted. So a read_committed reader of the output
 * topic gets through at once instead of waiting for the transaction timeout (5 minutes here).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { type JobProcess, startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { checkpointHeldCommittables, describeTransactions, openTransactionIds } from '../../harness/kafka-transactions.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

/** Nothing of the prefix is open, a read_committed reader is not held, and what the latest checkpoint holds is committed. */
async function assertNothingLingers(brokers: readonly BrokerAddress[], prefix: string, output: string, storage: string, run: JobProcess): Promise<void> {
  assert.deepEqual(await openTransactionIds(brokers, prefix), [], `open transactions of ${prefix} after the job's end\n${run.stderr}`);
  // Held back by an open transaction, this would wait for the 5-minute transaction timeout and fail.
  const committed = await readTopic({ bootstrap: brokers, topic: output, timeoutMs: 20_000 });
  assert.ok(committed.length > 0);
  const held = await checkpointHeldCommittables(storage, 'output');
  assert.equal(held.checkpointId, 2, 'the failure came right after checkpoint 2 completed');
  assert.ok(held.committables.length > 0, 'checkpoint 2 holds pre-committed transactions');
  const described = await describeTransactions(
    brokers,
    held.committables.map((committable) => committable.transactionalId),
  );
  for (const committable of held.committables) {
    const description = described.find((entry) => entry.transactionalId === committable.transactionalId);
    assert.equal(description?.state, 'CompleteCommit', `${committable.transactionalId} (held by checkpoint 2) was committed`);
    assert.equal(description?.producerEpoch, committable.producerEpoch, `${committable.transactionalId}: the checkpoint's transaction, not a later one`);
  }
}

describe("transactions at a job's end", () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function setUp(name: string, restartStrategy: object) {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, `${name}-in`, 2);
    const output = await createTestTopic(brokers, `${name}-out`, 2);
    const folder = await mkdtemp(join(tmpdir(), `weir-${name}-`));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 2, 60_000);
    const prefix = `${name}-${output.topic}`;
    const storage = join(folder, 'checkpoints');
    const env = {
      KAFKA_BROKERS: formatBootstrap(brokers),
      KC_INPUT: input.topic,
      KC_OUTPUT: output.topic,
      KC_PREFIX: prefix,
      KC_WORK_US: '60',
      KC_TXN_TIMEOUT: '5m',
      KC_RECOVERY_BUDGET: '30s',
      // Checkpoint 2 completes (durable), then the attempt fails before any sink hears of it.
      WEIR_FAULT: 'after-checkpoint-metadata:2:fail',
    };
    const config = { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', timeout: '20s', storage }, restartStrategy };
    return { brokers, output: output.topic, prefix, storage, env, config };
  }

  test('a job that fails for good: the checkpoint-held transactions are committed, the rest aborted', async () => {
    const { brokers, output, prefix, storage, env, config } = await setUp('end-failed', { type: 'none' });
    const run = startJobProcess(jobModule, config, env);
    const exit = await run.exit;
    assert.equal(exit.code, 1, run.stdout);
    assert.match(run.stderr, /injected failure at after-checkpoint-metadata of checkpoint 2/);
    await assertNothingLingers(brokers, prefix, output, storage, run);
  });

  test('a job cancelled while it waits to restart: the same', async () => {
    const { brokers, output, prefix, storage, env, config } = await setUp('end-cancelled', { type: 'fixed-delay', attempts: 3, delay: '30s' });
    const run = startJobProcess(jobModule, config, env);
    await waitFor('the restart wait', () => run.stdout.includes('restarting'), 60_000);
    run.child.kill('SIGTERM');
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);
    assert.match(run.stdout, /cancelled after 1 restarts, last checkpoint 2/);
    await assertNothingLingers(brokers, prefix, output, storage, run);
  });
});
