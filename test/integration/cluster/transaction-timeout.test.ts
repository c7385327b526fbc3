/**
 * Cluster mode when the broker's transaction timeout runs out under a task (issue 32, point 7).
 * A broker of the test's own, whose transaction.max.timeout.ms is 6 s (and that looks for
 * timed-out transactions every 500 ms), so a member at a 1 s checkpoint interval runs its tasks'
 * transactions at 6 s (min(brokerMax, max(60 s, 10 x interval))). Its session timeout is 20 s:
 * a task that waits "for the group" after a fencing waits two of them, 40 s.
 *
 * - The driver tells a transaction the broker timed out (its epoch bumped once, aborted) from one a
 *   new owner fenced (InitProducerId: the epoch bumped again), on this broker (transaction.version
 *   2) and on the shared transaction.version 1 one.
 * - A task whose checkpoint takes longer than its transaction may stay open (a slow state upload):
 *   the task gives the checkpoint up itself, saying why, and starts again from its latest
 *   checkpoint at once, instead of being aborted by the broker, answered "fenced" and left waiting.
 * - A member paused past the transaction timeout (but within its session timeout): every open
 *   transaction of it is aborted by the broker and its next request answered "fenced"; it still owns
 *   its tasks, and the broker timed them out (not a new owner), so they start again at once, said why.
 * Both read back read_committed: every input in the totals once, every running total right.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { transactionTimedOut } from '../../../src/cluster/transaction-timed-out.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import type { Payment, Total } from '../../fixtures/jobs/slow-upload-cluster-job.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { startWeirRun, until, type WeirRun } from '../../harness/weir-run.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'slow-upload-cluster-job.ts');
const SESSION_TIMEOUT_MS = 20_000;

describe('a cluster task whose transaction outlives the transaction timeout', () => {
  let folder: string;
  let brokers: BrokerAddress[];
  const members: WeirRun[] = [];
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-txn-timeout-'));
    const state = await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port: await freePort(),
      transactionMaxTimeoutMs: 6000,
      overrides: { 'transaction.abort.timed.out.transaction.cleanup.interval.ms': '500' },
      wipe: true,
    });
    brokers = [{ host: state.host, port: state.port }];
  });
  after(async () => {
    for (const run of members) {
      run.child.kill('SIGCONT');
      run.child.kill('SIGKILL');
      await run.exited;
    }
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await rm(folder, { recursive: true, force: true });
  });

  for (const version of [2, 1] as const) {
    test(`the driver tells a transaction the broker timed out from one a new owner fenced (transaction.version ${version})`, async () => {
      await tellApart(version === 2 ? brokers : testBrokers(1));
    });
  }

  async function tellApart(brokers: BrokerAddress[]): Promise<void> {
    const output = await createTestTopic(brokers, 'timed-out', 1);
    const connections = new ClusterConnections(brokers, { clientId: 'weir-test-timeout' });
    try {
      const driver = new TransactionDriver(connections, { transactionTimeoutMs: 2000 });
      const record = [{ topic: output.topic, partition: 0, value: Buffer.from('x') }];
      // Timed out by the broker: nobody else touched the transactional id.
      const lonely = `weir-test-lonely-${randomBytes(4).toString('hex')}`;
      const timedOut = await driver.initTransaction(lonely);
      await driver.send(timedOut, record);
      // (the shared broker looks for timed-out transactions every 10 s, this test's own every 500 ms)
      await until('the broker aborts the transaction', async () => ((await transactionTimedOut(driver, timedOut)) ? true : undefined), 30_000);
      await assert.rejects(driver.commitOpen(timedOut), (error) => error instanceof WeirError && error.code === 'TASK_FENCED');
      assert.equal(await transactionTimedOut(driver, timedOut), true, 'after the refused commit, still told as timed out');
      // Fenced by a new owner: InitProducerId on the same id while the transaction is open.
      const moved = `weir-test-moved-${randomBytes(4).toString('hex')}`;
      const old = await driver.initTransaction(moved);
      await driver.send(old, record);
      await driver.initTransaction(moved);
      await assert.rejects(driver.commitOpen(old), (error) => error instanceof WeirError && error.code === 'TASK_FENCED');
      assert.equal(await transactionTimedOut(driver, old), false, 'a new owner fenced it: not a timeout');
      // Neither while it is open and fine.
      const fine = await driver.initTransaction(`weir-test-fine-${randomBytes(4).toString('hex')}`);
      await driver.send(fine, record);
      assert.equal(await transactionTimedOut(driver, fine), false);
      await driver.commitOpen(fine);
    } finally {
      await connections.close();
      await output.remove();
    }
  }

  /**
   * The job's topics and a member started; its input (two partitions, 8 accounts) flows steadily,
   * 100 payments every 250 ms for 15 s, so every task has a transaction open at every checkpoint.
   */
  async function startStory(label: string, env: Record<string, string>) {
    const input = await createTestTopic(brokers, `${label}-in`, 2);
    const totals = await createTestTopic(brokers, `${label}-totals`, 2);
    const payments: Payment[] = Array.from({ length: 6000 }, (_, seq) => ({ seq, account: `a${seq % 8}`, amount: (seq % 7) + 1, ts: seq }));
    const run = startWeirRun(
      [
        jobModule,
        '--cluster',
        `txn-timeout-${label}-${randomBytes(3).toString('hex')}`,
        '--checkpoint-interval',
        '1s',
        '--checkpoint-storage',
        join(folder, `storage-${label}`),
        '--session-timeout',
        `${SESSION_TIMEOUT_MS / 1000}s`,
        '--no-ui',
      ],
      { ...env, SU_INPUT: input.topic, SU_TOTALS: totals.topic, SU_SLOW_MARKER: join(folder, `slow-${label}`), KAFKA_BROKERS: formatBootstrap(brokers) },
    );
    members.push(run);
    await run.waitFor(/payments task 1 started/, 60_000);
    const fed = (async () => {
      for (let from = 0; from < payments.length; from += 100) {
        await produce(input.topic, payments.slice(from, from + 100));
        await sleep(250);
      }
    })();
    fed.catch(() => {});
    return { totals: totals.topic, payments, run, fed };
  }

  async function produce(topic: string, payments: Payment[]): Promise<void> {
    const connections = new ClusterConnections(brokers);
    try {
      await new PlainProducer(connections).send(
        payments.map((entry) => ({
          topic,
          partition: Number(entry.account.slice(1)) % 2,
          key: Buffer.from(entry.account),
          value: Buffer.from(JSON.stringify(entry)),
        })),
        -1,
      );
    } finally {
      await connections.close();
    }
  }

  /** Every payment's running total, once, right (read_committed). */
  async function auditTotals(topic: string, payments: readonly Payment[]): Promise<void> {
    const bySeq = new Map<number, Total>();
    for (const raw of await readTopic({ bootstrap: brokers, topic })) {
      const record = JSON.parse(String(raw.value)) as Total;
      assert.equal(bySeq.has(record.seq), false, `seq ${record.seq} is in the totals twice`);
      bySeq.set(record.seq, record);
    }
    assert.equal(bySeq.size, payments.length, 'every payment is in the totals once');
    const running = new Map<string, number>();
    for (const entry of payments) {
      const next = (running.get(entry.account) ?? 0) + entry.amount;
      running.set(entry.account, next);
      assert.equal(bySeq.get(entry.seq)?.total, next, `the running total of ${entry.account} at seq ${entry.seq}`);
    }
  }

  /** Waits for `count` totals; well within two session timeouts of `since`, or the task was left waiting. */
  async function totalsWithin(topic: string, count: number, run: WeirRun): Promise<void> {
    let held = 0;
    try {
      await until(
        `${count} totals`,
        async () => {
          held = (await readTopic({ bootstrap: brokers, topic, timeoutMs: 20_000 })).length;
          return held >= count ? true : undefined;
        },
        SESSION_TIMEOUT_MS,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message} (the totals hold ${held}); the member's log:\n${run.stderr()}`);
    }
  }

  test('a checkpoint whose state upload outlasts the transaction timeout is given up, said why, and the task starts again at once', async () => {
    const { totals, payments, run, fed } = await startStory('slow', { SU_SLOW_MS: '10000', SU_SLOW_FROM: '3' });
    await run.waitFor(/slow-upload: checkpoint \d+'s snapshot takes/, 90_000);
    await fed;
    await totalsWithin(totals, payments.length, run);
    await sleep(2000); // anything still committed would show now
    await auditTotals(totals, payments);
    const log = run.stderr();
    assert.doesNotMatch(log, /was fenced/, 'no task of the only member was reported fenced');
    assert.match(
      log,
      /its transaction has been open \d+ ms and (checkpoint \d+|its checkpoint) has not reached its commit .*; the task transaction timeout 6000 ms .* would run out/,
      'the member said why the checkpoint was given up',
    );
    assert.match(log, /totals task \d+ started from checkpoint/, 'the task started again from its latest checkpoint');
  });

  test('a member paused past the transaction timeout (within its session timeout) starts its tasks again at once', async () => {
    const { totals, payments, run, fed } = await startStory('paused', {});
    await totalsWithin(totals, 1000, run);
    const pid = run.child.pid as number;
    process.kill(pid, 'SIGSTOP');
    await sleep(9000); // past the 6 s transaction timeout, within the 20 s session timeout
    process.kill(pid, 'SIGCONT');
    await fed;
    await totalsWithin(totals, payments.length, run);
    await sleep(2000);
    await auditTotals(totals, payments);
    const log = run.stderr();
    assert.doesNotMatch(log, /waits for the group's next assignment/, 'no task waited for a generation that was never coming');
    assert.match(log, /the broker aborted its transaction after the task transaction timeout 6000 ms/, 'the member said why its tasks start again');
  });
});
