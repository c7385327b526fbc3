/**
 * The checkpoint counts over a job's life: past the 100 rows of the history and across a restart,
 * in GET /api/job and on the dashboard (which showed "99 completed" at checkpoint 149 when it
 * counted the history's rows).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { launchBrowser } from '../../harness/browser.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

interface Counts {
  total: number;
  completed: number;
  failed: number;
  inProgress: number;
  restored: number;
}

test('checkpoint counts cover the job past 100 checkpoints and across a restart, in /api/job and on the dashboard', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-counts-'));
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
  const run = startWeirRun(
    [
      job,
      '--parallelism',
      '2',
      '--workers',
      '2',
      '--checkpoint-interval',
      '10ms',
      '--checkpoint-storage',
      join(folder, 'checkpoints'),
      '--restart-delay',
      '100ms',
      '--ui-port',
      '0',
    ],
    // The mapper throws once, when the test writes the file KS_FAIL_WHEN (after a checkpoint completed).
    {
      KS_OUTPUT: join(folder, 'out'),
      KS_COUNT: '10000000',
      KS_RATE: '4000',
      KS_FAIL_MARKER: join(folder, 'failed'),
      KS_FAIL_AFTER: '1',
      KS_FAIL_WHEN: join(folder, 'fail-now'),
    },
  );
  const browser = await launchBrowser();
  try {
    const url = await run.url();
    const jobInfo = async () => (await (await fetch(`${url}/api/job`)).json()) as { state: string; restarts: unknown[]; checkpointCounts: Counts };
    // Fail only once a checkpoint completed, so the restart has one to restore however slow the machine.
    await until('a completed checkpoint', async () => ((await jobInfo()).checkpointCounts.completed >= 1 ? true : undefined), 60_000);
    await writeFile(join(folder, 'fail-now'), 'now\n');
    const counts = await until(
      '150 completed checkpoints after a restart',
      async () => {
        const info = await jobInfo();
        return info.restarts.length === 1 && info.state === 'running' && info.checkpointCounts.completed >= 150 ? info.checkpointCounts : undefined;
      },
      120_000,
    );
    const history = (await (await fetch(`${url}/api/checkpoints`)).json()) as { status: string }[];
    assert.equal(history.length, 100, 'the history stays bounded');
    assert.ok(counts.completed > history.filter((row) => row.status === 'completed').length, JSON.stringify(counts));
    assert.equal(counts.restored, 1, 'the restart restored the latest checkpoint');
    assert.ok(counts.failed >= 0 && counts.inProgress <= 1, JSON.stringify(counts));
    assert.ok(counts.total >= counts.completed + counts.failed, JSON.stringify(counts));

    const metrics = await (await fetch(`${url}/metrics`)).text();
    const scraped = Number(/^weir_checkpoints_completed_total\{job="keyed-sum"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(scraped >= counts.completed, metrics);

    const page = await browser.newPage();
    await page.goto(`${url}/`);
    const shown = await until('the counts on the page', async () => {
      const text = (await page.locator('#checkpoint-counts').textContent()) ?? '';
      const match = /^([\d,]+) completed · ([\d,]+) aborted · (\d+) in progress · (\d+) restored$/.exec(text);
      return match === null ? undefined : { completed: Number((match[1] as string).replace(/,/g, '')), restored: Number(match[4]) };
    });
    assert.ok(shown.completed >= counts.completed, `the page shows ${shown.completed} completed, the API said ${counts.completed}`);
    assert.equal(shown.restored, 1);
  } finally {
    await browser.close();
    run.child.kill('SIGTERM');
    await new Promise((done) => (run.child.exitCode === null ? run.child.once('exit', done) : done(undefined)));
    await rm(folder, { recursive: true, force: true });
  }
});
