/**
 * A running job's REST API and metrics: the checkpoint list grows, Prometheus metrics count the
 * checkpoints, and `weir savepoint` and `weir stop --savepoint` act on the job through the API.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

test('REST API, metrics, weir savepoint and weir stop --savepoint on a running job', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-rest-'));
  try {
    const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
    const run = startWeirRun(
      [job, '--parallelism', '2', '--workers', '2', '--checkpoint-interval', '100ms', '--checkpoint-storage', join(folder, 'checkpoints'), '--ui-port', '0'],
      { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '200000', KS_RATE: '5000' },
    );
    const { child, exited } = run;
    try {
      const url = await run.url();

      // The API listens before the job module is loaded (503 until then).
      const jobInfo = await until('GET /api/job answering', async () => {
        const response = await fetch(`${url}/api/job`);
        return response.ok ? ((await response.json()) as { name: string; state: string; vertices: { name: string; parallelism: number }[] }) : undefined;
      });
      assert.equal(jobInfo.name, 'keyed-sum');
      assert.match(jobInfo.state, /^(starting|running)$/);
      await until('the job running', async () =>
        ((await (await fetch(`${url}/api/job`)).json()) as { state: string }).state === 'running' ? true : undefined,
      );
      assert.deepEqual(
        jobInfo.vertices.map((vertex) => vertex.parallelism),
        [2, 2],
      );

      const completed = async () =>
        ((await (await fetch(`${url}/api/checkpoints`)).json()) as { status: string }[]).filter((entry) => entry.status === 'completed').length;
      const first = await until('a completed checkpoint', async () => ((await completed()) >= 1 ? completed() : undefined));
      const later = await until('more checkpoints', async () => {
        const now = await completed();
        return now >= first + 3 ? now : undefined;
      });
      assert.ok(later > first, 'the checkpoint list grows');

      const metrics = await (await fetch(`${url}/metrics`)).text();
      const count = Number(/^weir_checkpoints_completed_total\{job="keyed-sum"\} (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(count >= later, metrics);
      assert.match(metrics, /^weir_last_checkpoint_duration_seconds\{job="keyed-sum"\} [\d.e-]+$/m);
      // Per subtask records and back pressure, and the file sink's transactions (a two-phase-commit sink),
      // once the workers have reported (once a second).
      const taskMetrics = await until('task metrics', async () => {
        const text = await (await fetch(`${url}/metrics`)).text();
        // Each worker reports on its own: wait for every subtask of both vertices.
        const subtasks = text.match(/^weir_task_back_pressured_ratio\{/gm)?.length ?? 0;
        return subtasks === 4 && /^weir_sink_transactions\{.*state="committed"\} [1-9]/m.test(text) ? text : undefined;
      });
      assert.match(taskMetrics, /^weir_task_records_in\{job="keyed-sum",vertex="[^"]+",subtask="1"\} [1-9]\d*$/m);
      assert.match(taskMetrics, /^weir_task_back_pressured_ratio\{job="keyed-sum",vertex="[^"]+",subtask="0"\} [\d.e-]+$/m);
      assert.match(taskMetrics, /^weir_sink_transactions\{job="keyed-sum",sink="[^"]+",state="committed"\} [1-9]\d*$/m);
      const withMetrics = (await (await fetch(`${url}/api/job`)).json()) as { vertices: { recordsIn: number; subtasks: unknown[] }[] };
      assert.ok(
        withMetrics.vertices.every((vertex) => vertex.recordsIn > 0 && vertex.subtasks.length === 2),
        JSON.stringify(withMetrics.vertices),
      );

      const savepoint = await weir(['savepoint', '--url', url]);
      assert.equal(savepoint.code, 0, savepoint.stderr);
      const savepointPath = /^savepoint \d+: (.+)$/m.exec(savepoint.stdout)?.[1] as string;
      assert.ok(existsSync(join(savepointPath, '_metadata')) && existsSync(join(savepointPath, '_committed')), savepoint.stdout);

      const stop = await weir(['stop', '--savepoint', '--url', url]);
      assert.equal(stop.code, 0, stop.stderr);
      assert.match(stop.stdout, /^stopped with savepoint \d+: .+$/m);
      assert.equal(await exited, 0, run.stderr());
    } finally {
      child.kill('SIGKILL');
    }

    const unreachable = await weir(['savepoint', '--url', 'http://127.0.0.1:1']);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /^weir: no running job answers at http:\/\/127\.0\.0\.1:1/m);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
