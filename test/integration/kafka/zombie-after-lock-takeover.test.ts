/**
 * A process that lost its checkpoint storage's lock must not complete a checkpoint (issue 32,
 * point 5). Run A is frozen (SIGSTOP) while it writes checkpoint 3's `_metadata`, for longer than
 * the lock's staleness; run B on the same folder takes the lock over, restores checkpoint 2 and
 * aborts what A left open (checkpoint 3's transactions among it). A is woken (SIGCONT): its
 * metadata write goes on. It must be refused (CHECKPOINT_STORAGE_LOCK_LOST), or a later start
 * restores checkpoint 3, whose transactions are gone (DATA_LOSS).
 *
 * Kafka -> keyBy -> count -> Kafka, exactly-once; the lock's staleness is shortened to 3 s
 * (WEIR_LOCK_STALE_AFTER_MS), A's heartbeat slowed to a minute; A's checkpoint 3 metadata write is held 2 s (the moment to freeze
 * it), B's checkpoints from 4 on are held a minute (B completes none before it is SIGKILLed).
 * Then C starts; read_committed, the output must be exact.
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
const STALE_AFTER_MS = 3000;

describe('a process that lost its checkpoint storage lock', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test('frozen past the staleness while writing _metadata, taken over, woken: its write is refused, the output exact', async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'zombie-lock-in', 2);
    const output = await createTestTopic(brokers, 'zombie-lock-out', 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-zombie-lock-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 2, COUNT);
    const storage = join(folder, 'checkpoints');
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '100' };
    const lockEnv = { WEIR_LOCK_STALE_AFTER_MS: String(STALE_AFTER_MS), WEIR_LOCK_HEARTBEAT_MS: '300' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '200ms', timeout: '2m', storage },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };

    // A's own heartbeat is slow (a minute, as a real one is 10 s against a 60 s staleness): woken, it
    // goes on with its metadata write long before a heartbeat could tell it the lock is gone.
    const zombie = startJobProcess(jobModule, config, {
      ...env,
      ...lockEnv,
      WEIR_LOCK_HEARTBEAT_MS: '60000',
      WEIR_TEST_STORAGE_DELAY: 'metadata:3:2000',
    });
    cleanups.push(async () => {
      zombie.child.kill('SIGCONT');
      zombie.child.kill('SIGKILL');
    });
    await waitFor('A holding checkpoint 3', () => zombie.stderr.includes('holding metadata of checkpoint 3') || zombie.child.exitCode !== null, 60_000);
    zombie.child.kill('SIGSTOP');
    assert.equal(zombie.child.exitCode, null, zombie.stderr);
    await sleep(STALE_AFTER_MS + 1000);

    const owner = startJobProcess(jobModule, config, { ...env, ...lockEnv, WEIR_TEST_STORAGE_DELAY: 'metadata:>=4:60000' });
    cleanups.push(async () => void owner.child.kill('SIGKILL'));
    await waitFor('B to take over and run', () => /holding metadata of checkpoint \d+/.test(owner.stderr) || owner.child.exitCode !== null, 60_000);
    assert.match(owner.stderr, /took over the lock of checkpoint folder .*whose heartbeat stopped/);
    assert.match(owner.stderr, /starting job "kafka-count" from checkpoint 2/);

    zombie.child.kill('SIGCONT');
    const metadata = join(storage, 'chk-3', '_metadata');
    await waitFor('A to end, or to complete checkpoint 3', () => zombie.child.exitCode !== null || existsSync(metadata), 60_000);
    assert.ok(!existsSync(metadata), `A completed checkpoint 3 after losing its lock:\n${zombie.stderr}`);
    await zombie.exit;
    assert.match(zombie.stderr, /refused to write to the checkpoint storage: the lock of checkpoint folder .* is no longer this process's/);

    owner.child.kill('SIGKILL');
    await owner.exit;
    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "kafka-count" from checkpoint 2/);
    assert.deepEqual(await auditCounts(brokers, output.topic, COUNT), exactCountAudit(COUNT));
  });
});
