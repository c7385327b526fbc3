/**
 * A start after a long stop. A broker forgets a transactional id once no transaction of it has
 * moved for `transactional.id.expiration.ms` (7 days by default), and then answers a commit of it
 * INVALID_PRODUCER_ID_MAPPING, which is data loss for a transaction still to commit. A restore
 * commits the restored checkpoint's transactions again; when they were committed already (the job
 * stopped cleanly, or a SIGKILL came after the commits), that answer must not fail the start: the
 * storage records which checkpoints' transactions are committed, and a restore of those commits
 * nothing. Here the broker the test starts forgets ids after 3 s instead of a week.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CompletedCheckpointStore } from '../../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { openCheckpointStorage } from '../../../src/checkpoint/storage/open-checkpoint-storage.ts';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import type { KafkaCommittable } from '../../../src/connectors/kafka/transaction-driver.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { checkpointHeldCommittables, describeTransactions } from '../../harness/kafka-transactions.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
const EXPIRATION_MS = 3000;

describe('a start after the broker forgot the transactional ids (transactional.id.expiration.ms)', () => {
  let folder: string;
  let brokers: BrokerAddress[];
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-expired-ids-'));
    const state = await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port: await freePort(),
      overrides: {
        'transactional.id.expiration.ms': String(EXPIRATION_MS),
        'transaction.remove.expired.transaction.cleanup.interval.ms': '500',
      },
      wipe: true,
    });
    brokers = [{ host: state.host, port: state.port }];
  });
  after(async () => {
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await rm(folder, { recursive: true, force: true });
  });

  /** Topics with `count` input records, and the job's environment and config on its own storage. */
  async function setUp(name: string, count: number, interval: string) {
    const input = (await createTestTopic(brokers, `${name}-in`, 2)).topic;
    const output = (await createTestTopic(brokers, `${name}-out`, 2)).topic;
    await writeChaosInput(brokers, input, 2, count);
    const storage = join(folder, name);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input, KC_OUTPUT: output };
    const config = { parallelism: 2, workers: 2, checkpointing: { interval, storage } };
    return { output, storage, env, config };
  }

  /** Waits until the broker has forgotten every id of these committables (DescribeTransactions finds none). */
  async function waitUntilExpired(committables: readonly KafkaCommittable[]): Promise<void> {
    for (const { transactionalId } of committables) {
      // DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND (thrown) for an id the broker forgot.
      const forgotten = () =>
        describeTransactions(brokers, [transactionalId]).then(
          (described) => described.length === 0,
          (error: unknown) => (error as { apiId?: string }).apiId === 'TRANSACTIONAL_ID_NOT_FOUND',
        );
      await waitFor(`${transactionalId} to expire`, forgotten, 60_000);
    }
  }

  /** Whether the storage's latest completed checkpoint carries the record that its transactions are committed. */
  async function latestRecordedCommitted(storageFolder: string): Promise<boolean> {
    const storage = openCheckpointStorage(storageFolder);
    const latest = await new CompletedCheckpointStore(storage).latest();
    return latest !== undefined && (await storage.isMarkedCommitted(latest.location.path));
  }

  /** Starts the job again from its storage: it must run to its end and the output be exact. */
  async function resumeExact(setup: Awaited<ReturnType<typeof setUp>>, count: number): Promise<void> {
    const resumed = startJobProcess(jobModule, setup.config, setup.env);
    assert.equal((await resumed.exit).code, 0, resumed.stderr);
    assert.match(resumed.stderr, /starting job "kafka-count" from checkpoint \d+/);
    assert.deepEqual(await auditCounts(brokers, setup.output, count), exactCountAudit(count));
  }

  test('stopped cleanly (SIGTERM) mid-input, the ids expire, the start from its checkpoint is exact', async () => {
    const count = 20_000;
    const setup = await setUp('stopped', count, '200ms');
    const run = startJobProcess(jobModule, setup.config, { ...setup.env, KC_WORK_US: '300' });
    await waitFor('checkpoint 3', () => /^checkpoint [3-9]$/m.test(run.stdout), 60_000);
    run.child.kill('SIGTERM');
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);
    assert.match(run.stdout, /^cancelled/m, 'stopped before its input ended');
    const held = await checkpointHeldCommittables(setup.storage, 'output');
    assert.ok(held.committables.length > 0, `checkpoint ${held.checkpointId} holds transactions (committed at the job's end)`);
    const recorded = await latestRecordedCommitted(setup.storage);
    await waitUntilExpired(held.committables);
    await resumeExact(setup, count);
    assert.ok(recorded, "the stopped job's latest checkpoint was recorded committed");
  });

  test('SIGKILL after a checkpoint completed and its transactions were committed, the ids expire, the start is exact', async () => {
    const count = 40_000;
    // Checkpoints 3 s apart: the kill comes after checkpoint 1's commits, well before checkpoint 2.
    const setup = await setUp('killed', count, '3s');
    const run = startJobProcess(jobModule, setup.config, { ...setup.env, KC_WORK_US: '500' });
    await waitFor('checkpoint 1', () => /^checkpoint 1$/m.test(run.stdout), 60_000);
    const held = await checkpointHeldCommittables(setup.storage, 'output');
    assert.equal(held.checkpointId, 1);
    assert.ok(held.committables.length > 0, 'checkpoint 1 holds transactions');
    await waitFor(
      "checkpoint 1's commits",
      async () => {
        const described = await describeTransactions(
          brokers,
          held.committables.map((committable) => committable.transactionalId),
        );
        return held.committables.every((committable) =>
          described.some(
            (entry) => entry.transactionalId === committable.transactionalId && entry.state === 'CompleteCommit' && entry.producerId === committable.producerId,
          ),
        );
      },
      10_000,
    );
    // The record that they are committed is written after the commits, asynchronously: give it a moment.
    const recorded = await waitFor('the committed record', () => latestRecordedCommitted(setup.storage), 1500).then(
      () => true,
      () => false,
    );
    run.child.kill('SIGKILL');
    assert.equal((await run.exit).signal, 'SIGKILL');
    const storage = openCheckpointStorage(setup.storage);
    assert.equal((await new CompletedCheckpointStore(storage).latest())?.checkpointId, 1, 'killed before checkpoint 2 completed');
    await waitUntilExpired(held.committables);
    await resumeExact(setup, count);
    assert.ok(recorded, 'checkpoint 1 was recorded committed after its commits, before the kill');
  });
});
