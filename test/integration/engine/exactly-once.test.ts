/**
 * Exactly-once without Kafka: generator -> map -> keyBy -> keyed running sum -> file sink at
 * parallelism 2 over two worker threads, checkpoints every 100 ms, under failures. The committed
 * output must hold every record exactly once with exact running sums.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJobProcess } from '../../harness/job-process.ts';
import { auditKeyedSum } from '../../harness/keyed-sum-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const startRun = (folder: string, env: Record<string, string>, config: object) =>
  startJobProcess(jobModule, config, { KS_OUTPUT: join(folder, 'out'), ...env });

const configFor = (folder: string, mode: 'exactly-once' | 'at-least-once') => ({
  parallelism: 2,
  workers: 2,
  checkpointing: { interval: '100ms', mode, storage: join(folder, 'checkpoints') },
  restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
});

describe('exactly-once across failures, without Kafka', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const newFolder = async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-eo-'));
    folders.push(folder);
    return folder;
  };

  test('a mapper that throws once: the job restarts from its checkpoint; output exact', async () => {
    const folder = await newFolder();
    const count = 20_000;
    const run = startRun(
      folder,
      { KS_COUNT: String(count), KS_RATE: '20000', KS_FAIL_MARKER: join(folder, 'failed'), KS_FAIL_AFTER: '4000' },
      configFor(folder, 'exactly-once'),
    );
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);
    assert.match(run.stdout, /restarting/);
    assert.match(run.stdout, /finished after 1 restarts/);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
  });

  test('SIGKILL of the whole process at random moments, and between "checkpoint complete" and the commit: output exact', async () => {
    const folder = await newFolder();
    const count = 30_000;
    const env = { KS_COUNT: String(count), KS_RATE: '15000' };
    const config = configFor(folder, 'exactly-once');
    let kills = 0;
    // A crash right after checkpoint metadata is durable, before any sink was told to commit.
    const faulted = startRun(folder, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=4' }, config);
    const faultExit = await faulted.exit;
    assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
    assert.match(faulted.stderr, /killing the process at after-checkpoint-metadata of checkpoint \d+/);
    kills++;
    for (let round = 0; round < 4; round++) {
      const run = startRun(folder, env, config);
      await sleep(300 + Math.floor(Math.random() * 900));
      run.child.kill('SIGKILL');
      const exit = await run.exit;
      if (exit.signal === 'SIGKILL') kills++;
    }
    assert.ok(kills >= 4, `killed ${kills} times`);
    const last = startRun(folder, env, config);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
  });

  test('at-least-once mode under the same kills: nothing lost (duplicates allowed)', async () => {
    const folder = await newFolder();
    const count = 20_000;
    const env = { KS_COUNT: String(count), KS_RATE: '15000' };
    const config = configFor(folder, 'at-least-once');
    for (let round = 0; round < 3; round++) {
      const run = startRun(folder, env, config);
      await sleep(300 + Math.floor(Math.random() * 700));
      run.child.kill('SIGKILL');
      await run.exit;
    }
    const last = startRun(folder, env, config);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    const audit = auditKeyedSum(join(folder, 'out'), count);
    assert.equal(audit.missing, 0);
    assert.ok(audit.records >= count);
  });
});
