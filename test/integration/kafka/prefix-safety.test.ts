/**
 * One sink never touches another's transactions. Transactional ids are `<prefix>-<subtask>-<slot>`
 * exactly: the sink with prefix `p` does not take the ids of a sink with prefix `p-x` for its own,
 * neither when it aborts what lingers at its start and end nor in `weir doctor --prefix p`. And a
 * job refuses to start on a prefix another live job is writing under (it would fence that job's
 * transactions), while a restart after its own crash is not refused (lingering-and-restart.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { MessageRecord } from '@platformatic/kafka';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { committableOf, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { weir } from '../../harness/cli.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { openTransactionIds } from '../../harness/kafka-transactions.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

describe('transactional id prefixes', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("sink p's start and end, and weir doctor --prefix p, leave the pre-committed transaction of sink p-x alone", async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'prefix-exact-in', 2);
    const output = await createTestTopic(brokers, 'prefix-exact-out', 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-prefix-exact-'));
    const connections = new ClusterConnections(brokers);
    cleanups.push(
      input.remove,
      output.remove,
      () => rm(folder, { recursive: true, force: true }),
      () => connections.close(),
    );
    await writeChaosInput(brokers, input.topic, 2, 2_000);
    const prefix = `p-${output.topic}`;
    const otherId = `${prefix}-x-0-3`; // sink "p-x"'s subtask 0, slot 3

    // Sink p-x has pre-committed a transaction (written, acknowledged, waiting for its checkpoint).
    const driver = new TransactionDriver(connections, { transactionTimeoutMs: 300_000 });
    const other = await driver.initTransaction(otherId);
    const records: MessageRecord[] = Array.from({ length: 10 }, (_, i) => ({
      topic: output.topic,
      partition: 0,
      key: Buffer.from('x'),
      value: Buffer.from(`other-${i}`),
    }));
    await driver.send(other, records);

    const doctor = await weir(['doctor', '--brokers', formatBootstrap(brokers), '--prefix', prefix]);
    assert.match(doctor.stdout, new RegExp(`^open transactions under "${prefix}": none$`, 'm'), doctor.stdout + doctor.stderr);
    assert.equal(doctor.code, 0, doctor.stderr);
    const doctorOther = await weir(['doctor', '--brokers', formatBootstrap(brokers), '--prefix', `${prefix}-x`]);
    assert.match(doctorOther.stdout, new RegExp(`: ${otherId}$`, 'm'));

    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_PREFIX: prefix };
    const run = startJobProcess(jobModule, { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') } }, env);
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);

    assert.deepEqual(await openTransactionIds(brokers, `${prefix}-x`), [otherId], "sink p-x's transaction is still open");
    await driver.commit(committableOf(other)); // no DATA_LOSS: it was never fenced
    const committed = await readTopic({ bootstrap: brokers, topic: output.topic });
    assert.equal(committed.filter((record) => String(record.value).startsWith('other-')).length, 10);
    assert.equal(committed.length, 2_010);
  });

  test('a prefix another live job is writing under is refused at start, naming the prefix and transactionalIdPrefix', async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'prefix-live-in', 2);
    const outputA = await createTestTopic(brokers, 'prefix-live-a', 2);
    const outputB = await createTestTopic(brokers, 'prefix-live-b', 2);
    const folder = await mkdtemp(join(tmpdir(), 'weir-prefix-live-'));
    cleanups.push(input.remove, outputA.remove, outputB.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 2, 60_000);
    const prefix = `live-${outputA.topic}`;
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_PREFIX: prefix, KC_WORK_US: '300' };
    const config = (name: string) => ({ parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage: join(folder, name) } });

    const first = startJobProcess(jobModule, config('a'), { ...env, KC_OUTPUT: outputA.topic });
    try {
      await waitFor('the first job to run', () => /checkpoint [2-9]/.test(first.stdout), 60_000);
      const second = startJobProcess(jobModule, config('b'), { ...env, KC_OUTPUT: outputB.topic });
      const exit = await second.exit;
      assert.equal(exit.code, 1, second.stdout);
      assert.match(second.stderr, new RegExp(`another live producer uses the transactional id prefix "${prefix}"`));
      assert.match(second.stderr, /transactionalIdPrefix/);
      assert.equal((await readTopic({ bootstrap: brokers, topic: outputB.topic, isolation: 'read_uncommitted' })).length, 0, 'the second job wrote nothing');
    } finally {
      first.child.kill('SIGTERM');
      await first.exit;
    }
    assert.doesNotMatch(first.stderr, /DATA_LOSS/, 'the first job was not fenced');
    assert.deepEqual(await openTransactionIds(brokers, prefix), []);
  });
});
