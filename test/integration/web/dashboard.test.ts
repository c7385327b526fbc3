/**
 * The dashboard of a running job, in a real headless Chromium: the job graph with parallelism,
 * records flowing through the operators, the file sink's transactions being committed, the
 * checkpoint list growing while we watch, and a restart with its cause.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { launchBrowser } from '../../harness/browser.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

test('the dashboard of a running job shows its graph, records, sink transactions, a growing checkpoint list and a restart', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-dashboard-'));
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
  // The mapper throws once, after 8000 records of one subtask (about 4 s in): the restart shows up with its cause.
  const run = startWeirRun(
    [
      job,
      '--parallelism',
      '2',
      '--workers',
      '2',
      '--checkpoint-interval',
      '300ms',
      '--checkpoint-storage',
      join(folder, 'checkpoints'),
      '--restart-attempts',
      '3',
      '--restart-delay',
      '200ms',
      '--ui-port',
      '0',
    ],
    { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '1000000', KS_RATE: '4000', KS_FAIL_MARKER: join(folder, 'failed'), KS_FAIL_AFTER: '8000' },
  );
  const { child } = run;
  const browser = await launchBrowser();
  try {
    const url = await run.url();
    const page = await browser.newPage();
    await page.goto(`${url}/`);

    // The job graph: both vertices, each with parallelism 2.
    await page.getByTestId('vertex').first().waitFor();
    const parallelisms = await page.getByTestId('vertex').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-parallelism')));
    assert.deepEqual(parallelisms, ['2', '2']);
    await until('the job running', async () => ((await page.getByTestId('job-state').textContent()) === 'running' ? true : undefined));

    // The checkpoint list grows while we watch.
    const completedRows = () => page.locator('[data-testid="checkpoint-row"][data-status="completed"]').count();
    const first = await until('a completed checkpoint on the page', async () => ((await completedRows()) >= 1 ? completedRows() : undefined));
    const later = await until('more checkpoints on the page', async () => {
      const now = await completedRows();
      return now >= first + 3 ? now : undefined;
    });
    assert.ok(later > first, `the checkpoint list grew from ${first} to ${later}`);
    const cells = await page.locator('[data-testid="checkpoint-row"][data-status="completed"]').first().locator('td').allTextContents();
    assert.match(cells[4] ?? '', /^\d+ ms$/, `duration: ${cells.join(' | ')}`);
    assert.match(cells[5] ?? '', /^[\d.]+ ms$/, `sync part: ${cells.join(' | ')}`);
    assert.match(cells[6] ?? '', /^[\d.]+ ms$/, `async part: ${cells.join(' | ')}`);
    assert.match(cells[7] ?? '', /B$/, `size: ${cells.join(' | ')}`);

    // Records flow: the source chain has read some, the sink chain received some.
    await until('records in on both operator chains', async () => {
      const rows = await page.getByTestId('operator-row').evaluateAll((nodes) => nodes.map((node) => (node.children[2]?.textContent ?? '0').replace(/,/g, '')));
      return rows.length === 2 && rows.every((value) => Number(value) > 0) ? rows : undefined;
    });

    // The charts of the last minutes: drawn by uPlot (served by the job: no CDN), from /api/history.
    for (const id of ['chart-throughput', 'chart-lag', 'chart-backpressure', 'chart-checkpoints']) {
      await page.locator(`[data-testid="${id}"] .uplot canvas`).first().waitFor({ timeout: 30_000 });
    }
    const history = await until('history with throughput', async () => {
      const view = (await (await fetch(`${url}/api/history`)).json()) as {
        samples: { recordsInPerSecond: number; recordsOutPerSecond: number }[];
        checkpoints: unknown[];
      };
      return view.samples.some((sample) => sample.recordsInPerSecond > 0 && sample.recordsOutPerSecond > 0) && view.checkpoints.length > 0 ? view : undefined;
    });
    assert.ok(history.samples.length >= 2);
    assert.equal((await fetch(`${url}/assets/uplot.js`)).status, 200);
    // Names in full, in the graph as in the table.
    const names = await page.getByTestId('operator-row').evaluateAll((rows) => rows.map((row) => row.children[0]?.textContent ?? ''));
    const labels = await page
      .getByTestId('vertex')
      .evaluateAll((nodes) => nodes.map((node) => [...node.querySelectorAll('text')].map((text) => text.textContent).join(' ')));
    for (const [i, name] of names.entries()) assert.ok(labels[i]?.replace(/\s+/g, ' ').includes(name.replace(/\s+/g, ' ')), `${labels[i]} shows ${name}`);
    // The sink chain's row says what it wrote.
    const sinkOut = await page.locator('[data-testid="operator-row"][data-sink="true"]').first().locator('td').nth(3).textContent();
    assert.match(sinkOut ?? '', /^[\d,]+ written$/);
    // The job's own metrics (its process function counts, measures and meters what it sees): on the page and in /metrics.
    await until('the user metrics on the page', async () => {
      const rows = await page.getByTestId('user-metric-row').allTextContents();
      return rows.some((text) => text.startsWith('running-sumsums')) && rows.some((text) => text.includes('amount/0/p99')) ? rows : undefined;
    });
    const prometheus = await (await fetch(`${url}/metrics`)).text();
    assert.match(prometheus, /^weir_user_metric\{job="keyed-sum",vertex="[^"]+",operator="running-sum",metric="sums"\} [1-9]\d*$/m);
    assert.match(prometheus, /^weir_user_metric\{job="keyed-sum",vertex="[^"]+",operator="running-sum",metric="records\.perSecond"\} [\d.]+$/m);
    // A row opens its subtasks: one line each.
    await page.getByTestId('operator-row').first().click();
    await until('the subtasks of the first chain', async () => ((await page.getByTestId('subtask-row').count()) === 2 ? true : undefined));

    // The file sink is a two-phase-commit sink: its committed transactions appear and rise.
    const committed = async () => {
      const cellsOfRow = await page.getByTestId('transaction-row').first().locator('td').allTextContents();
      return Number((cellsOfRow[4] ?? '0').replace(/,/g, ''));
    };
    const committedFirst = await until('committed sink transactions', async () => ((await committed()) > 0 ? committed() : undefined));
    await until('more committed sink transactions', async () => ((await committed()) > committedFirst ? true : undefined));

    // The injected failure: a restart row with its cause, and the job running again.
    const cause = await until('the restart on the page', async () => {
      const rows = await page.getByTestId('restart-row').allTextContents();
      return rows.length > 0 ? rows.join('\n') : undefined;
    });
    assert.match(cause, /injected failure after 8000 records/);
    // The latest failure, with its stack.
    const stack = await until('the failure with its stack', async () => {
      const text = await page
        .getByTestId('failure-stack')
        .textContent()
        .catch(() => null);
      return text?.includes('injected failure after 8000 records') ? text : undefined;
    });
    assert.match(stack, /\n\s+at /);
    await until('the job running again', async () => ((await page.getByTestId('job-state').textContent()) === 'running' ? true : undefined));
  } finally {
    await browser.close();
    child.kill('SIGTERM');
    await new Promise((done) => (child.exitCode === null ? child.once('exit', done) : done(undefined)));
    await rm(folder, { recursive: true, force: true });
  }
});
