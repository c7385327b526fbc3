/**
 * One `weir run` per checkpoint folder: a second one is refused naming the first's pid and host;
 * after the first is killed with SIGKILL (its lock stays behind), the next takes the lock over.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { startWeirRun } from '../../harness/weir-run.ts';

test("a second weir run on one checkpoint folder is refused; a SIGKILLed one's lock is taken over", async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-lock-'));
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
  const storage = join(folder, 'checkpoints');
  const args = [job, '--log-level', 'debug', '--checkpoint-interval', '100ms', '--checkpoint-storage', storage];
  const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '100000000', KS_RATE: '2000' };
  const first = startWeirRun([...args, '--no-ui'], env);
  try {
    await first.waitFor(/checkpoint \d+ completed/);
    const pid = first.child.pid as number;

    const second = await weir(['run', ...args, '--no-ui'], { ...env, KS_OUTPUT: join(folder, 'out-2') });
    assert.equal(second.code, 1, second.stderr);
    assert.match(
      second.stderr,
      new RegExp(`^weir: the checkpoint folder .* is in use by process ${pid} on host ${hostname().replace(/\./g, '\\.')}: one job per folder$`, 'm'),
    );
    assert.match(second.stderr, /^hint: stop the other job .*or give this one another checkpointing\.storage \(--checkpoint-storage\)/m);
    assert.doesNotMatch(second.stderr, /starting job/);

    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(existsSync(join(storage, '_lock')), 'SIGKILL leaves the lock behind');

    const third = startWeirRun([...args, '--no-ui'], env);
    try {
      await third.waitFor(new RegExp(`took over the lock of checkpoint folder .*: process ${pid} on host .*, which is no longer running`));
      await third.waitFor(/checkpoint \d+ completed/);
      third.child.kill('SIGTERM');
      assert.equal(await third.exited, 0, third.stderr());
      assert.ok(!existsSync(join(storage, '_lock')), 'the lock goes when the job ends');
    } finally {
      third.child.kill('SIGKILL');
    }
  } finally {
    first.child.kill('SIGKILL');
    await rm(folder, { recursive: true, force: true });
  }
});

test("a run whose lock another process took over stops, and leaves the job's transactions to the new owner", async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-lock-lost-'));
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
  const storage = join(folder, 'checkpoints');
  const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '100000000', KS_RATE: '2000' };
  const run = startWeirRun([job, '--log-level', 'debug', '--checkpoint-interval', '100ms', '--checkpoint-storage', storage, '--no-ui'], env);
  try {
    await run.waitFor(/checkpoint \d+ completed/);
    // Another process took it over as stale (this one was stopped, or could not refresh it, for a minute).
    const now = Date.now();
    const owner = { version: 1, pid: 1, host: 'elsewhere', startedAt: now, heartbeatAt: now, id: 'the-new-owner' };
    // Replaced whole, as a lock is always written (never half-written in place: a check between the truncation and the write read an empty lock).
    await writeFile(join(storage, '_lock.new-owner'), JSON.stringify(owner));
    await rename(join(storage, '_lock.new-owner'), join(storage, '_lock'));
    await run.waitFor(
      /no longer this process's \(now held by process 1 on host elsewhere.*: cancelling the job, and leaving its transactions to the new owner/,
      30_000,
    );
    await run.exited;
    assert.doesNotMatch(run.stderr(), /could not finish its transactions/);
    assert.equal(JSON.parse(await readFile(join(storage, '_lock'), 'utf8')).id, 'the-new-owner', "the new owner's lock stays");
  } finally {
    run.child.kill('SIGKILL');
    await rm(folder, { recursive: true, force: true });
  }
});
