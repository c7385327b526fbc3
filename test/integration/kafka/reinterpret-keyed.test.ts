/**
 * reinterpretAsKeyedStream over Kafka: a topic of 8 partitions whose partition p holds key group p
 * (written with keyGroupOf), read by a job of maxParallelism 8 whose keyed running count follows
 * the source with no exchange. SIGKILLed (once between "checkpoint complete" and the commit) and
 * restored at parallelism 3, then 2: each key's state moved with its partition, and the output,
 * read back read_committed, has every committed input once with exact counts. A topic partitioned
 * otherwise fails the job by name, as does one of another partition count.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { keyGroupOf } from '../../../src/connectors/kafka/key-group-partitioner.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');

describe('reinterpretAsKeyedStream: Kafka partitions by key group -> keyed count with no exchange -> Kafka', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  async function setUp(label: string, partitions: number, count: number, partitionOf?: (seq: number, key: string) => number) {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, `reinterpret-in-${label}`, partitions);
    const output = await createTestTopic(brokers, `reinterpret-out-${label}`, 4);
    const folder = await mkdtemp(join(tmpdir(), 'weir-reinterpret-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, partitions, count, partitionOf);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '100', KC_REINTERPRET: '1' };
    const config = (parallelism: number, restartStrategy: object = { type: 'fixed-delay', attempts: 3, delay: 100 }) => ({
      parallelism,
      maxParallelism: 8,
      workers: 2,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy,
    });
    return { brokers, output, env, config };
  }

  test('exactly-once across SIGKILLs and rescales 2 -> 3 -> 2: each key group with its partition, exact counts', async () => {
    const count = 40_000;
    const { brokers, output, env, config } = await setUp('exact', 8, count, (_seq, key) => keyGroupOf(key, 8));
    const faulted = startJobProcess(jobModule, config(2), { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    assert.equal((await faulted.exit).signal, 'SIGKILL', faulted.stderr);
    assert.match(faulted.stderr, /running kafka source \([^)]*\) -> process -> kafka sink \([^)]*\) x2 on/, 'one chain: no exchange');
    const rescaled = startJobProcess(jobModule, config(3), env);
    await waitFor('a checkpoint at parallelism 3', () => /checkpoint \d+/.test(rescaled.stdout) || rescaled.child.exitCode !== null, 60_000);
    await sleep(300 + Math.floor(Math.random() * 500));
    rescaled.child.kill('SIGKILL');
    await rescaled.exit;
    assert.match(rescaled.stderr, /from checkpoint \d+/);
    assert.match(rescaled.stderr, /-> kafka sink \([^)]*\) x3 on/, 'restored at parallelism 3');
    const last = startJobProcess(jobModule, config(2), env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /from checkpoint \d+/);
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  });

  test('a topic not partitioned by key group fails the job, naming the key, its key group and the fix', async () => {
    const { env, config } = await setUp('unpartitioned', 8, 2_000);
    const run = startJobProcess(jobModule, config(2, { type: 'none' }), env);
    const exit = await run.exit;
    assert.equal(exit.code, 1, run.stderr);
    assert.match(run.stderr, /reads a stream reinterpreted as keyed, but key "key-\d+" \(key group \d+\) arrived at the subtask of key groups \d+-\d+/);
    assert.match(run.stderr, /partitioner: keyGroupPartitioner/);
  });

  test('a topic of another partition count than maxParallelism is refused at the start', async () => {
    const { env, config } = await setUp('partition-count', 6, 600, (_seq, key) => keyGroupOf(key, 6));
    const run = startJobProcess(jobModule, config(2, { type: 'none' }), env);
    const exit = await run.exit;
    assert.equal(exit.code, 1, run.stderr);
    assert.match(run.stderr, /its splits hold 6 key groups for the job's maxParallelism of 8/);
    assert.match(run.stderr, /give the job maxParallelism 6/);
  });
});
