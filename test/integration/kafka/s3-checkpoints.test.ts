/**
 * A Kafka job whose checkpoints live on S3 (a real S3-compatible server, S3Proxy, started here):
 * Kafka in, keyBy, keyed count, Kafka out, exactly-once, SIGKILLed right between "checkpoint
 * complete" (its `_metadata` written to the bucket) and the commit, then at a random moment, then
 * run to its end. Each restart takes over the dead run's lock object and restores from the bucket;
 * a read_committed audit finds every committed input exactly once with exact counts. A second
 * process on the same storage is refused; `weir checkpoints list` reads the bucket.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { weir } from '../../harness/cli.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { type S3TestServer, startS3Proxy } from '../../harness/s3-proxy.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
let server: S3TestServer;
const bucket = `weir-s3-job-${randomBytes(4).toString('hex')}`;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  server = await startS3Proxy();
  await server.createBucket(bucket);
});
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
  await server?.stop();
});

test('checkpoints on S3: SIGKILL between checkpoint complete and commit, and at random; each restart restores from the bucket; exact output', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 's3-chk-in', 4);
  const output = await createTestTopic(brokers, 's3-chk-out', 4);
  cleanups.push(input.remove, output.remove);
  const count = 30_000;
  await writeChaosInput(brokers, input.topic, 4, count);
  const storage = `s3://${bucket}/jobs/kafka-count`;
  const env = { ...server.env, KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '300' };
  const config = {
    parallelism: 2,
    workers: 2,
    checkpointing: { interval: '200ms', storage },
    restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
  };

  // Killed right after checkpoint 3's _metadata reached the bucket, before any sink committed it.
  const faulted = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
  assert.equal((await faulted.exit).signal, 'SIGKILL', faulted.stderr);

  // The next run takes the dead run's lock over, restores from S3, and is killed while it works.
  const second = startJobProcess(jobModule, config, env);
  await waitFor('the second run restores and checkpoints', () => /checkpoint \d+/.test(second.stdout) || second.child.exitCode !== null, 60_000);
  assert.match(
    second.stderr,
    new RegExp(`took over the lock of checkpoint storage ${storage}: process ${faulted.child.pid} on host .*, which is no longer running`),
  );
  assert.match(second.stderr, /starting job "kafka-count" from checkpoint [3-9]\d*/);
  // Meanwhile a second process on the same storage is refused, naming the first.
  assert.equal(second.child.exitCode, null, `the second run ended before it could be killed: ${second.stderr}`);
  const intruder = startJobProcess(jobModule, config, env);
  assert.equal((await intruder.exit).code, 1);
  assert.match(intruder.stderr, new RegExp(`the checkpoint storage ${storage} is in use by process ${second.child.pid} on host .*: one job per storage`));
  await sleep(Math.floor(Math.random() * 500));
  second.child.kill('SIGKILL');
  await second.exit;

  const last = startJobProcess(jobModule, config, env);
  const exit = await last.exit;
  assert.equal(exit.code, 0, last.stderr);
  assert.match(last.stderr, /starting job "kafka-count" from checkpoint \d+/);
  assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));

  // The storage as `weir checkpoints` sees it: the retained checkpoint, read from the bucket.
  const listed = await weir(['checkpoints', 'list', storage, '--json'], server.env);
  assert.equal(listed.code, 0, listed.stderr);
  const entries = JSON.parse(listed.stdout) as { checkpointId: number; status: string; path: string }[];
  assert.ok(
    entries.some((entry) => entry.status === 'completed' && entry.path.startsWith(`${storage}/chk-`)),
    listed.stdout,
  );
  const shown = await weir(['checkpoints', 'show', (entries.find((entry) => entry.status === 'completed') as { path: string }).path], server.env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^checkpoint \d+ of job "kafka-count"/m);
});
