/**
 * The timeout trap. A broker whose transaction.max.timeout.ms is 60 s (and that looks for timed-out
 * transactions every second): the preflight refuses a sink timeout above it, and one shorter than a
 * checkpoint plus a recovery. When a recovery takes longer than the transaction timeout anyway, the
 * broker aborts the pre-committed transaction and the restarted job fails loudly at the commit,
 * saying why; no success is reported.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

describe('the transaction timeout trap', () => {
  let folder: string;
  let brokers: BrokerAddress[];
  let input: string;
  let output: string;
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-trap-'));
    const state = await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port: await freePort(),
      transactionMaxTimeoutMs: 60_000,
      overrides: { 'transaction.abort.timed.out.transaction.cleanup.interval.ms': '1000' },
      wipe: true,
    });
    brokers = [{ host: state.host, port: state.port }];
    input = (await createTestTopic(brokers, 'trap-in', 2)).topic;
    output = (await createTestTopic(brokers, 'trap-out', 2)).topic;
    await writeChaosInput(brokers, input, 2, 20_000);
  });
  after(async () => {
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await rm(folder, { recursive: true, force: true });
  });

  const env = () => ({ KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input, KC_OUTPUT: output });
  const config = (timeout: string) => ({
    parallelism: 2,
    workers: 2,
    checkpointing: { interval: '200ms', timeout, storage: join(folder, 'checkpoints') },
    restartStrategy: { type: 'none' as const },
  });

  async function preflightError(transactionTimeout: string, checkpointTimeout: string): Promise<WeirError> {
    Object.assign(process.env, env(), { KC_TXN_TIMEOUT: transactionTimeout });
    try {
      await startJob({ job: jobModule, config: config(checkpointTimeout) });
    } catch (error) {
      assert.ok(error instanceof WeirError);
      return error;
    } finally {
      delete process.env.KC_TXN_TIMEOUT;
    }
    assert.fail('the preflight let the job start');
  }

  test("a sink timeout above the broker's transaction.max.timeout.ms is refused before the job starts", async () => {
    const error = await preflightError('15m', '10s');
    assert.equal(error.code, 'PREFLIGHT_FAILED');
    assert.match(error.message, /transactionTimeout \(15m = 900000 ms\) is above the brokers' transaction\.max\.timeout\.ms \(1m = 60000 ms\)/);
    assert.match(error.hint ?? '', /at most 1m, or raise transaction\.max\.timeout\.ms/);
  });

  test('a sink timeout shorter than a checkpoint plus a recovery is refused with the numbers', async () => {
    const error = await preflightError('30s', '10s');
    assert.match(error.message, /transactionTimeout \(30s = 30000 ms\) is not longer than a transaction can stay open before its commit/);
    assert.match(
      error.message,
      /checkpointing\.interval 200ms \+ checkpointing\.timeout 10s\) \+ the longest restart delay 0ms \+ recoveryBudget 1m = 1m = 70200 ms/,
    );
    assert.match(error.hint ?? '', /raise transactionTimeout above 1m/);
  });

  test('a recovery slower than the transaction timeout: the restarted job fails at the commit, loudly, as data loss', async () => {
    // Allowed by the preflight (6 s > 200 ms interval + 3 s checkpoint timeout + the declared 1 s
    // recovery budget), then a crash between "checkpoint complete" and the commit, and a restart
    // 12 s later: past the 6 s transaction timeout.
    const jobEnv = { ...env(), KC_TXN_TIMEOUT: '6s', KC_RECOVERY_BUDGET: '1s', KC_WORK_US: '50' };
    const crashed = startJobProcess(jobModule, config('3s'), { ...jobEnv, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    const crash = await crashed.exit;
    assert.equal(crash.signal, 'SIGKILL', crashed.stderr);
    await sleep(12_000);
    const restarted = startJobProcess(jobModule, config('3s'), jobEnv);
    const exit = await restarted.exit;
    assert.equal(exit.code, 1, restarted.stderr);
    assert.match(restarted.stderr, /starting job "kafka-count" from checkpoint \d+/);
    assert.match(
      restarted.stderr,
      /^weir: Kafka answered (PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|INVALID_TXN_STATE) to the commit of transaction ".*" \(producer id \d+, epoch \d+\): the transaction was aborted before its commit and its records are lost$/m,
    );
    assert.match(restarted.stderr, /^hint: most likely the broker's transaction timeout expired before the commit/m);
    assert.doesNotMatch(restarted.stdout, /finished/);
  });
});
