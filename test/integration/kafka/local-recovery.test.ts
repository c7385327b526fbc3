/**
 * Local recovery (`checkpointing.localRecovery`, issue 34 point 4), against the real broker and a
 * real S3-compatible server (S3Proxy): a Kafka job with keyed state and its checkpoints on S3,
 * SIGKILLed right after a checkpoint's `_metadata` reached the bucket; the restart on this machine
 * reads every state file from its local copy (none from the bucket). Killed again at random, its
 * copies then damaged (one cut short, the others' bytes changed): the next restart reads those from
 * the bucket and runs to the end. The read_committed audit finds every input exactly once with
 * exact counts, and the copies left are of checkpoints the bucket holds.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { type S3TestServer, startS3Proxy } from '../../harness/s3-proxy.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
let server: S3TestServer;
const bucket = `weir-local-recovery-${randomBytes(4).toString('hex')}`;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  server = await startS3Proxy();
  await server.createBucket(bucket);
});
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
  await server?.stop();
});

/** Every file under a folder. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

const localReads = (stderr: string) => {
  const [, local, storage] =
    /local recovery: (\d+) state files \(\d+ bytes\) read from this machine's copies, (\d+) from the checkpoint storage/.exec(stderr) ?? [];
  return local === undefined ? undefined : { local: Number(local), storage: Number(storage) };
};

test('local recovery: a restart on this machine reads the state from its copies, a damaged copy from the bucket; exact output', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'local-recovery-in', 4);
  const output = await createTestTopic(brokers, 'local-recovery-out', 4);
  cleanups.push(input.remove, output.remove);
  const stateDir = await mkdtemp(join(tmpdir(), 'weir-local-recovery-'));
  cleanups.push(() => rm(stateDir, { recursive: true, force: true }));
  const count = 30_000;
  await writeChaosInput(brokers, input.topic, 4, count);
  const env = { ...server.env, KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '300' };
  const config = {
    parallelism: 2,
    workers: 2,
    stateDir,
    checkpointing: { interval: '200ms', storage: `s3://${bucket}/jobs/kafka-count`, localRecovery: true },
    restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
  };

  const faulted = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
  assert.equal((await faulted.exit).signal, 'SIGKILL', faulted.stderr);
  assert.ok((await filesUnder(join(stateDir, 'local-recovery'))).length > 0, 'the tasks copied their state files here');

  // The restart reads every state file from this machine's copies.
  const second = startJobProcess(jobModule, config, env);
  await waitFor('the second run restores and checkpoints', () => /checkpoint \d+/.test(second.stdout) || second.child.exitCode !== null, 60_000);
  assert.match(second.stderr, /starting job "kafka-count" from checkpoint [3-9]\d*/);
  const restored = localReads(second.stderr);
  assert.ok(restored !== undefined && restored.local > 0 && restored.storage === 0, `every state file from the local copies: ${second.stderr}`);
  await sleep(Math.floor(Math.random() * 500));
  second.child.kill('SIGKILL');
  await second.exit;

  // Damaged copies: one cut short, the others' bytes changed. They are read from the bucket.
  const copies = (await filesUnder(join(stateDir, 'local-recovery'))).filter((file) => !file.endsWith('.tmp'));
  assert.ok(copies.length > 0);
  for (const [index, file] of copies.entries()) {
    const bytes = await readFile(file);
    if (index === 0) await writeFile(file, bytes.subarray(0, Math.floor(bytes.byteLength / 2)));
    else if (bytes.byteLength > 0) {
      bytes[bytes.byteLength - 1] = (bytes[bytes.byteLength - 1] as number) ^ 0xff;
      await writeFile(file, bytes);
    }
  }
  const last = startJobProcess(jobModule, config, env);
  const exit = await last.exit;
  assert.equal(exit.code, 0, last.stderr);
  const fromBucket = localReads(last.stderr);
  assert.ok(fromBucket !== undefined && fromBucket.storage > 0, `the damaged copies are read from the bucket: ${last.stderr}`);
  assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));

  // The copies left are of checkpoints the bucket holds (retained: 1, the newest).
  const folders = await readdir(join(stateDir, 'local-recovery', (await readdir(join(stateDir, 'local-recovery')))[0] as string));
  assert.ok(folders.length <= 2, `only the newest checkpoints' copies are left: ${folders.join(', ')}`);
});
