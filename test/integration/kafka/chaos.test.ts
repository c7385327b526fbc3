/**
 * Kafka in, keyBy, keyed running count, Kafka out, exactly-once, at parallelism 2 with checkpoints
 * every 200 ms, from an input of 100k committed records and aborted transactions between them. The
 * job process is SIGKILLed at random moments (and once right between "checkpoint complete" and the
 * commit) and restarted each time. A read_committed reader of the output must find every committed
 * input exactly once, exact counts, nothing from aborted input. At-least-once: no loss.
 */
import assert from 'node:assert/strict';
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

describe('chaos: Kafka -> keyBy -> count -> Kafka under SIGKILL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  async function chaos(guarantee: 'exactly-once' | 'at-least-once', count: number, kills: number, leastKills: number) {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, `chaos-in-${guarantee}`, 4);
    const output = await createTestTopic(brokers, `chaos-out-${guarantee}`, 4);
    const folder = await mkdtemp(join(tmpdir(), 'weir-chaos-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 4, count);

    const env = {
      KAFKA_BROKERS: formatBootstrap(brokers),
      KC_INPUT: input.topic,
      KC_OUTPUT: output.topic,
      KC_GUARANTEE: guarantee,
      KC_WORK_US: guarantee === 'exactly-once' ? '25' : '100',
    };
    // (at-least-once has no transactions to wait for: more work a record, so its input lasts the rounds)
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };
    let killed = 0;
    if (guarantee === 'exactly-once') {
      const faulted = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
      const exit = await faulted.exit;
      assert.equal(exit.signal, 'SIGKILL', faulted.stderr);
      killed++;
    }
    while (killed < kills) {
      const run = startJobProcess(jobModule, config, env);
      // A random moment once the run is under way (its first checkpoint done), so every round makes progress.
      await waitFor('the run', () => /checkpoint \d+/.test(run.stdout) || run.child.exitCode !== null, 60_000);
      await sleep(Math.floor(Math.random() * 800));
      const alive = run.child.exitCode === null;
      run.child.kill('SIGKILL');
      const exit = await run.exit;
      if (!alive) {
        // On a loaded machine the rounds may use up the input first: the run ended on its own, after
        // the kills so far; the audit below holds all the same. Enough kills must have landed.
        assert.equal(exit.code, 0, `round ${killed + 1}: ${run.stderr}`);
        assert.ok(killed >= leastKills, `the job ended before it could be killed (round ${killed + 1}): ${run.stderr}`);
        break;
      }
      assert.equal(exit.signal, 'SIGKILL');
      killed++;
    }
    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "kafka-count" from checkpoint \d+/);
    return auditCounts(brokers, output.topic, count);
  }

  test('exactly-once: up to 6 kills (one between checkpoint complete and commit; at least 3), exact output', async () => {
    const audit = await chaos('exactly-once', 100_000, 6, 3);
    assert.deepEqual(audit, exactCountAudit(100_000));
  });

  test('at-least-once: up to 3 kills (at least 2), nothing lost, nothing from aborted input', async () => {
    const audit = await chaos('at-least-once', 60_000, 3, 2);
    assert.equal(audit.missing, 0);
    assert.equal(audit.fromAborted, 0);
    assert.ok(audit.outputs >= 60_000);
  });
});
