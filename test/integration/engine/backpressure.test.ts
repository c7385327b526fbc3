/**
 * A slow stage slows the source: with credit-based flow control the records generated but not yet
 * consumed stay below a bound set by the channel credits and the batch size, whatever the input
 * size; with buffer debloating (network.debloat) that bound follows the slow stage's consumption,
 * so a barrier waits behind about `target` of its work; and exactly-once holds under SIGKILL with
 * a back-pressured job whose batches shrank.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';
import type { DebloatReport } from '../../fixtures/jobs/debloat-job.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { auditKeyedSum } from '../../harness/keyed-sum-audit.ts';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');

test('a deliberately slow sink keeps the records in flight bounded by credits x batch size', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bp-'));
  try {
    const count = 100_000;
    process.env.BP_COUNT = String(count);
    process.env.BP_REPORT = join(folder, 'report.json');
    const batchSize = 256;
    const channelCredits = 2;
    await runJob({ job: join(fixtures, 'backpressure-job.ts'), config: { workers: 1, batchSize, channelCredits } });
    const report = JSON.parse(await readFile(process.env.BP_REPORT, 'utf8')) as { generated: number; consumed: number; maxInFlight: number };
    assert.equal(report.generated, count);
    assert.equal(report.consumed, count);
    // In flight at most: the credits of the one channel, one batch over them, and the batch being emitted.
    const bound = (channelCredits + 2) * batchSize;
    assert.ok(report.maxInFlight > 0, 'the sink saw records in flight');
    assert.ok(report.maxInFlight <= bound, `at most ${bound} records in flight, saw ${report.maxInFlight} (of ${count})`);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

/** Runs the debloat fixture (a sink of 1 ms per record behind a channel) and returns its report. */
async function runDebloatJob(folder: string, debloat: { enabled: boolean; target?: string }): Promise<DebloatReport> {
  const report = join(folder, `report-${debloat.enabled}.json`);
  Object.assign(process.env, { DB_COUNT: '4000', DB_MS_PER_RECORD: '1', DB_REPORT: report });
  try {
    await runJob({ job: join(fixtures, 'debloat-job.ts'), config: { workers: 1, batchSize: 512, channelCredits: 4, network: { debloat } } });
  } finally {
    for (const name of ['DB_COUNT', 'DB_MS_PER_RECORD', 'DB_REPORT']) delete process.env[name];
  }
  return JSON.parse(await readFile(report, 'utf8')) as DebloatReport;
}

test('with debloating the batches into a slow stage shrink, and so do the records in flight before it', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-debloat-'));
  try {
    // Off (today's behaviour): the slow sink gets full batches, and 4 x 512 records wait before it.
    const off = await runDebloatJob(folder, { enabled: false });
    // On, with a target of 100 ms at about 1000 records/s: about 100 records in flight, in batches of about 25.
    const on = await runDebloatJob(folder, { enabled: true, target: '100ms' });
    t.diagnostic(`off: ${JSON.stringify(off)}; on: ${JSON.stringify(on)}`);
    for (const report of [off, on]) {
      assert.equal(report.generated, 4000);
      assert.equal(report.consumed, 4000, 'every record through, none twice');
    }
    assert.equal(off.lateMaxBatch, 512, 'without debloating the batches stay whole');
    assert.ok(off.maxInFlight >= 3 * 512, `without debloating the channel fills up: ${off.maxInFlight} records in flight`);
    assert.ok(off.lateMaxInFlight > 512, `and stays full: ${off.lateMaxInFlight} records in flight`);
    assert.ok(on.lateMaxBatch < 512 / 4, `with debloating the batches shrink: at most ${on.lateMaxBatch} records`);
    assert.ok(on.lateMaxInFlight < 512, `with debloating less than one full batch is in flight: ${on.lateMaxInFlight} records`);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('exactly-once under SIGKILL while a slow async stage holds the job back and its batches shrank', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-debloat-eo-'));
  try {
    const count = 3000;
    // 2 lookup subtasks of capacity 4 at 10 ms: about 800 records/s, far below the generator.
    const env = { KS_COUNT: String(count), KS_OUTPUT: join(folder, 'out'), SK_LATENCY_MS: '10', SK_CAPACITY: '4' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
      network: { debloat: { enabled: true, target: '100ms' } },
    };
    const job = join(fixtures, 'slow-keyed-sum-job.ts');
    let kills = 0;
    const faulted = startJobProcess(job, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    const faultExit = await faulted.exit;
    assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
    assert.match(faulted.stderr, /killing the process at after-checkpoint-metadata of checkpoint \d+/);
    kills++;
    for (let round = 0; round < 3; round++) {
      const run = startJobProcess(job, config, env);
      await sleep(600 + Math.floor(Math.random() * 900));
      run.child.kill('SIGKILL');
      const exit = await run.exit;
      if (exit.signal === 'SIGKILL') kills++;
    }
    assert.ok(kills >= 3, `killed ${kills} times`);
    const last = startJobProcess(job, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "slow-keyed-sum" from checkpoint \d+/);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
