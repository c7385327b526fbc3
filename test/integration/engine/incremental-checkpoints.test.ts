/**
 * Incremental checkpoints (checkpointing.incremental, issue 34) in a real job: generator -> map ->
 * keyBy -> keyed running sum over 5,000 keys -> file sink, checkpoints every 100 ms, so each one
 * changes a third of the keys. The whole process is SIGKILLed at random moments and between
 * "checkpoint complete" and the commit; the committed output must hold every record exactly once
 * with exact running sums (test/harness/keyed-sum-audit.ts), checkpoints must have been written as
 * changes on earlier ones, retention must never have deleted a folder a kept checkpoint needs, and a
 * chain must restore at another parallelism. Then the same with the process killed while retention
 * deletes a folder and while a checkpoint's metadata write is held (its files written, it not yet
 * complete).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertChainsIntact, completedCheckpoints } from '../../harness/checkpoint-chains.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditKeyedSum, readCommittedRecords } from '../../harness/keyed-sum-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const configFor = (folder: string, parallelism: number) => ({
  parallelism,
  workers: 2,
  checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints'), incremental: true, retained: 2 },
  restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
});
const exact = (count: number) => ({ records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });

describe('incremental checkpoints under failures', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });

  test('SIGKILLs at random moments and after "checkpoint complete": output exact, checkpoints written as changes, no shared file deleted while needed; then restored at parallelism 3', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-incremental-'));
    folders.push(folder);
    const count = 60_000;
    const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: String(count), KS_RATE: '15000', KS_KEYS: '5000' };
    let sawChanges = false;
    const watch = setInterval(() => {
      for (const metadata of completedCheckpoints(folder).values()) {
        if (metadata.operators.some((operator) => operator.subtasks.some((subtask) => (subtask.keyedChanges?.length ?? 0) > 0))) sawChanges = true;
      }
    }, 50);
    try {
      const faulted = startJobProcess(jobModule, configFor(folder, 2), { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=6' });
      const faultExit = await faulted.exit;
      assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
      assertChainsIntact(folder);
      for (let round = 0; round < 3; round++) {
        const run = startJobProcess(jobModule, configFor(folder, 2), env);
        await sleep(700 + Math.floor(Math.random() * 900));
        run.child.kill('SIGKILL');
        await run.exit;
        assertChainsIntact(folder);
      }
      const rescaled = startJobProcess(jobModule, configFor(folder, 3), env);
      await waitFor('more committed output at parallelism 3', () => readCommittedRecords(join(folder, 'out')).length > 0, 60_000);
      const exit = await rescaled.exit;
      assert.equal(exit.code, 0, rescaled.stderr);
      assert.match(rescaled.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    } finally {
      clearInterval(watch);
    }
    assert.ok(sawChanges, 'some checkpoint was written as changes on an earlier one (keyedChanges)');
    assertChainsIntact(folder);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count, 5000), exact(count));
  });

  test('SIGKILL while retention deletes and while a metadata write is held (the asynchronous part done, the checkpoint not yet complete): output exact, chains intact', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-incremental-'));
    folders.push(folder);
    const count = 40_000;
    const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: String(count), KS_RATE: '15000', KS_KEYS: '5000' };
    for (const [delay, line] of [
      ['discard:>=1:3000', /holding discard of checkpoint \d+/],
      ['metadata:>=6:3000', /holding metadata of checkpoint \d+/],
    ] as const) {
      const run = startJobProcess(jobModule, configFor(folder, 2), { ...env, WEIR_TEST_STORAGE_DELAY: delay });
      await waitFor(`the job holding ${delay}`, () => line.test(run.stderr), 60_000);
      run.child.kill('SIGKILL');
      await run.exit;
      assertChainsIntact(folder);
    }
    const last = startJobProcess(jobModule, configFor(folder, 2), env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assertChainsIntact(folder);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count, 5000), exact(count));
  });
});
