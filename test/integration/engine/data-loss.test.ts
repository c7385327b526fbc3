/**
 * A commit that finds its data gone fails the job loudly and is never skipped: the process crashes
 * between "checkpoint complete" and the commit, the pre-committed files vanish, and the restarted
 * job refuses to go on with an error that says the records are lost.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startJobProcess } from '../../harness/job-process.ts';

test('a pre-committed transaction that is gone at commit time fails the job as DATA_LOSS, with no restart loop', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-loss-'));
  try {
    const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 5, delay: 50 },
    };
    const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '20000', KS_RATE: '10000' };
    const crashed = await startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' }).exit;
    assert.equal(crashed.signal, 'SIGKILL');

    const pending = join(folder, 'out', '.pending');
    const files = await readdir(pending);
    assert.ok(files.length > 0, 'checkpoint 3 left pre-committed files behind');
    for (const file of files) await rm(join(pending, file));

    const run = startJobProcess(jobModule, config, env);
    const exit = await run.exit;
    assert.equal(exit.code, 1);
    assert.match(run.stderr, /^weir: the pre-committed file .* is gone and was never committed: its records are lost$/m);
    assert.match(run.stderr, /^hint: /m);
    assert.doesNotMatch(run.stdout, /restarting/, 'data loss is not retried');
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
