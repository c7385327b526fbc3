/**
 * A task fails while the coordinator writes a checkpoint's `_metadata` (issue 32, point 4). The
 * failover aborts that checkpoint, yet its metadata write goes on and lands; only a discard, queued
 * behind it, deletes it again. The restart must not begin before that: its sinks abort every
 * transaction the restored (older) checkpoint does not hold, the newer checkpoint's included, and
 * a SIGKILL before the discard would leave a `_metadata` whose transactions are gone (the next
 * start fails with DATA_LOSS).
 *
 * Kafka -> keyBy -> count -> Kafka, exactly-once. Checkpoint 3's metadata write is held 5 s
 * (WEIR_TEST_STORAGE_DELAY) and every task's acknowledgement of it fails the attempt
 * (WEIR_FAULT=checkpoint-acknowledged:3:fail); its discard is held 30 s, and so is the metadata of
 * every later checkpoint (a restarted attempt must not complete a newer checkpoint before the kill). The process
 * is SIGKILLed once chk-3/_metadata is there (and a moment longer, time for a restarted attempt to
 * have aborted what lingers). A start then restores whatever is latest; read_committed, the output
 * must be exact.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
const COUNT = 40_000;

describe('a failover while a checkpoint completes', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("an aborted checkpoint's metadata never outlives the restart's aborts: SIGKILL then start, exact", async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'failover-metadata-in', 2);
    const output = await createTestTopic(brokers, 'failover-metadata-out', 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-failover-metadata-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 2, COUNT);
    const storage = join(folder, 'checkpoints');
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '100' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '200ms', timeout: '60s', storage },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };

    const faulted = startJobProcess(jobModule, config, {
      ...env,
      WEIR_FAULT: 'checkpoint-acknowledged:3:fail',
      WEIR_TEST_STORAGE_DELAY: 'metadata:3:5000,discard:3:30000,metadata:>=4:30000',
    });
    cleanups.push(async () => void faulted.child.kill('SIGKILL'));
    await waitFor('chk-3/_metadata', () => existsSync(join(storage, 'chk-3', '_metadata')) || faulted.child.exitCode !== null, 60_000);
    assert.equal(faulted.child.exitCode, null, `the first run ended early:\n${faulted.stderr}`);
    // The attempt failed while the metadata was held (the failure itself is logged once the attempt has ended).
    assert.match(faulted.stderr, /checkpoint 3 aborted: the job failed and restarts/);
    await sleep(1000);
    faulted.child.kill('SIGKILL');
    await faulted.exit;
    const restartedBeforeKill = /starting job "kafka-count" from checkpoint 2/.test(faulted.stdout + faulted.stderr);

    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(
      exit.code,
      0,
      `the start after the kill (the first run had ${restartedBeforeKill ? '' : 'not '}restarted from checkpoint 2 before it):\n${last.stderr}`,
    );
    assert.deepEqual(await auditCounts(brokers, output.topic, COUNT), exactCountAudit(COUNT));
  });
});
