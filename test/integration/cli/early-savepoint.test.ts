/**
 * A savepoint asked for while the job starts (its REST API is up, /api/job says "starting") waits
 * for the tasks to run and completes; so does a stop-with-savepoint. /health/ready says 503 while
 * the job starts and 200 once it runs; /health is 200 throughout.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'slow-start-job.ts');

async function jobState(url: string): Promise<string | undefined> {
  const response = await fetch(`${url}/api/job`);
  return response.ok ? ((await response.json()) as { state: string }).state : undefined;
}

test('weir savepoint and weir stop --savepoint while the job is starting wait for its tasks and complete', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-early-savepoint-'));
  const storage = join(folder, 'checkpoints');
  const env = { SS_OUTPUT: join(folder, 'out'), SS_OPEN_MS: '4000' };
  const args = [job, '--log-level', 'debug', '--checkpoint-interval', '200ms', '--checkpoint-storage', storage, '--ui-port', '0'];
  try {
    const run = startWeirRun(args, env);
    try {
      const url = await run.url();
      assert.equal((await fetch(`${url}/health`)).status, 200, 'alive as soon as it listens');
      await until('the job starting', async () => ((await jobState(url)) === 'starting' ? true : undefined));
      const notReady = await fetch(`${url}/health/ready`);
      assert.equal(notReady.status, 503);
      assert.deepEqual(await notReady.json(), { status: 'DOWN', state: 'starting' });

      const savepoint = await weir(['savepoint', '--url', url]);
      assert.equal(savepoint.code, 0, `${savepoint.stderr}\n${run.stderr()}`);
      const path = /^savepoint \d+: (.+)$/m.exec(savepoint.stdout)?.[1] as string;
      assert.ok(existsSync(join(path, '_committed')), savepoint.stdout);
      assert.equal(await jobState(url), 'running');
      assert.equal((await fetch(`${url}/health/ready`)).status, 200);
      // Periodic checkpoints go on after it.
      await run.waitFor(/checkpoint \d+ completed/, 60_000);

      const stop = await weir(['stop', '--savepoint', '--url', url]);
      assert.equal(stop.code, 0, stop.stderr);
      assert.equal(await run.exited, 0, run.stderr());
    } finally {
      run.child.kill('SIGKILL');
    }

    // Again, resumed, and stopped while it starts: it stops with a savepoint once its tasks run.
    const again = startWeirRun(args, env);
    try {
      const url = await again.url();
      await until('the job starting', async () => ((await jobState(url)) === 'starting' ? true : undefined));
      const stop = await weir(['stop', '--savepoint', '--url', url]);
      assert.equal(stop.code, 0, `${stop.stderr}\n${again.stderr()}`);
      assert.match(stop.stdout, /^stopped with savepoint \d+: .+$/m);
      assert.equal(await again.exited, 0, again.stderr());
    } finally {
      again.child.kill('SIGKILL');
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
