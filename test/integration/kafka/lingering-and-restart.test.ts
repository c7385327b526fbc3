/**
 * Lingering transactions and broker restarts.
 * - A crash mid-transaction leaves transactions open and read_committed readers held at the last
 *   stable offset. The restarted job aborts them before it writes anything new: in every partition
 *   the first record after the crash lies beyond the abort marker, and a read_committed reader gets
 *   through long before the 15-minute transaction timeout.
 * - The broker is restarted in the middle of a run: the job recovers and the output is exact.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { LATEST_OFFSET, listOffsets } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { type JobProcess, startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

async function highWatermarks(brokers: readonly BrokerAddress[], topic: string): Promise<Map<number, bigint>> {
  const connections = new ClusterConnections(brokers);
  try {
    const info = await connections.topic(topic);
    return await listOffsets(connections, info, info.partitions, 'read_uncommitted', LATEST_OFFSET);
  } finally {
    await connections.close();
  }
}

async function openTransactions(brokers: readonly BrokerAddress[], prefix: string): Promise<string[]> {
  const connections = new ClusterConnections(brokers);
  try {
    return await new TransactionDriver(connections, { transactionTimeoutMs: 60_000 }).listOpenTransactions(prefix);
  } finally {
    await connections.close();
  }
}

describe('lingering transactions and broker restarts', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test('a crash mid-transaction: the lingering transactions are aborted before any new output', async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'linger-in', 2);
    const output = await createTestTopic(brokers, 'linger-out', 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-linger-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    // 1 s checkpoints: a subtask writes more than the 256 KiB its sink gathers before sending within each.
    const count = 150_000;
    await writeChaosInput(brokers, input.topic, 2, count);
    const prefix = `linger-${output.topic}`;
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_PREFIX: prefix, KC_WORK_US: '60' };
    const config = { parallelism: 2, workers: 2, checkpointing: { interval: '1s', storage: join(folder, 'checkpoints') } };

    const first = startJobProcess(jobModule, config, env);
    await waitFor('two checkpoints', () => /checkpoint [2-9]/.test(first.stdout), 60_000);
    // The crash must leave an open transaction with records on the broker: the sink sends a
    // transaction's records once 256 KiB gather (or at the barrier), so at a given moment the open
    // one may hold none yet. Freeze the job, look, and thaw it until one has; then kill it frozen,
    // so what was seen is what the crash leaves.
    let held = false;
    for (let attempt = 0; attempt < 100 && !held; attempt++) {
      first.child.kill('SIGSTOP');
      held = await readTopic({ bootstrap: brokers, topic: output.topic, timeoutMs: 300 }).then(
        () => false,
        (error: unknown) => /last stable offset/.test(String(error)),
      );
      if (!held) {
        first.child.kill('SIGCONT');
        await sleep(20);
      }
    }
    first.child.kill('SIGKILL');
    await first.exit;
    assert.ok(held, 'an open transaction had records on the broker when the job was killed');
    const lingering = await openTransactions(brokers, prefix);
    assert.ok(lingering.length > 0, 'the crash left transactions open');
    await assert.rejects(readTopic({ bootstrap: brokers, topic: output.topic, timeoutMs: 1000 }), /last stable offset/, 'read_committed readers are held');
    const crashEnds = await highWatermarks(brokers, output.topic);

    const second = startJobProcess(jobModule, config, env);
    const exit = await second.exit;
    assert.equal(exit.code, 0, second.stderr);
    // The lock was taken over from the killed run: its open transactions are not watched as a live
    // producer's would be (that watch made every restart after a crash wait 2-10 s).
    assert.match(second.stderr, /took over the lock of checkpoint folder/);
    assert.match(
      second.stderr,
      /open transaction\(s\) under "linger-[^"]+", left by the job's previous run \(.*no longer running\): ended by this start, not watched/,
    );
    assert.deepEqual(await openTransactions(brokers, prefix), []);
    // In each partition the abort markers came first: no record of the restarted run sits at the old end.
    const afterCrash = (await readTopic({ bootstrap: brokers, topic: output.topic, isolation: 'read_uncommitted' })).filter(
      (record) => record.offset >= (crashEnds.get(record.partition) as bigint),
    );
    assert.ok(afterCrash.length > 0, 'the restarted run wrote output');
    for (const [partition, end] of crashEnds) {
      const firstNew = afterCrash.filter((record) => record.partition === partition).sort((a, b) => Number(a.offset - b.offset))[0];
      if (firstNew !== undefined) assert.ok(firstNew.offset > end, `partition ${partition}: first new record at ${firstNew.offset}, the old end was ${end}`);
    }
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  });

  test('the broker restarts in the middle of a run: the job recovers, output exact', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-broker-restart-'));
    const dataDir = join(folder, 'kafka');
    cleanups.push(async () => {
      await stopLocalBroker({ dataDir });
      await rm(folder, { recursive: true, force: true });
    });
    const port = await freePort();
    const state = await startLocalBroker({ dataDir, port, wipe: true });
    const brokers = [{ host: state.host, port: state.port }];
    const input = await createTestTopic(brokers, 'restart-in', 2);
    const output = await createTestTopic(brokers, 'restart-out', 2);
    const count = 40_000;
    await writeChaosInput(brokers, input.topic, 2, count);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '60' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '300ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 20, delay: '1s' },
    };
    const run: JobProcess = startJobProcess(jobModule, config, env);
    await waitFor('two checkpoints', () => /checkpoint [2-9]/.test(run.stdout), 60_000);
    await stopLocalBroker({ dataDir });
    await sleep(1000);
    await startLocalBroker({ dataDir, port });
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  });
});
