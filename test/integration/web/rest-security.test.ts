/**
 * The REST API against the web pages a user visits and the network: cross-site POSTs are refused
 * (403), a Host of another name is refused on loopback (DNS rebinding), --ui-token guards /api and
 * /metrics (and `weir savepoint` sends it), --ui-host beyond loopback warns without a token, and
 * /health answers throughout. Real HTTP requests, and a real browser page on another origin.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { launchBrowser } from '../../harness/browser.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { startWeirRun, until, type WeirRun } from '../../harness/weir-run.ts';

const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const folders: string[] = [];
const runs: WeirRun[] = [];
after(async () => {
  for (const run of runs) run.child.kill('SIGKILL');
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

async function startJob(extra: string[], env: NodeJS.ProcessEnv = {}): Promise<WeirRun> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-rest-security-'));
  folders.push(folder);
  const run = startWeirRun([job, '--checkpoint-interval', '200ms', '--checkpoint-storage', join(folder, 'checkpoints'), ...extra], {
    KS_OUTPUT: join(folder, 'out'),
    KS_COUNT: '100000000',
    KS_RATE: '2000',
    ...env,
  });
  runs.push(run);
  return run;
}

/** A request with exactly these headers (fetch would not let us set Host). */
function rawRequest(url: string, method: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method, headers }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

const stateOf = async (url: string, init: RequestInit = {}) => ((await (await fetch(`${url}/api/job`, init)).json()) as { state: string }).state;

test('cross-site POSTs and foreign Host headers are refused with 403; the dashboard, curl and weir savepoint still act', async () => {
  const run = await startJob(['--ui-port', '0']);
  const url = await run.url();
  await until('the job running', async () => ((await stateOf(url)) === 'running' ? true : undefined));

  for (const headers of [{ origin: 'http://evil.example' }, { origin: 'null' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }]) {
    const refused = await fetch(`${url}/api/stop`, { method: 'POST', headers });
    assert.equal(refused.status, 403, JSON.stringify(headers));
    assert.match(((await refused.json()) as { error: string }).error, /(cross-site|same-site|another origin)/);
  }
  const rebound = await rawRequest(`${url}/api/job`, 'GET', { host: `evil.example:${new URL(url).port}` });
  assert.equal(rebound.status, 403, rebound.body);
  assert.match(rebound.body, /is not this machine's/);

  // A page on another origin in a real browser: its fetch and its form both reach the server (no
  // CORS preflight for them) and are refused; the job keeps running.
  const page = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(`<form method="POST" action="${url}/api/stop"><button id="go">stop</button></form>`);
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  const browser = await launchBrowser();
  try {
    const tab = await browser.newPage();
    for (const origin of [`http://localhost:${(page.address() as { port: number }).port}`, `http://127.0.0.1:${(page.address() as { port: number }).port}`]) {
      await tab.goto(`${origin}/`);
      await tab.evaluate((target) => fetch(`${target}/api/stop`, { method: 'POST', mode: 'no-cors' }).then(() => undefined), url);
      const [answered] = await Promise.all([tab.waitForResponse(`${url}/api/stop`), tab.click('#go')]);
      assert.equal(answered.status(), 403, `a form posted from ${origin}`);
      assert.equal(await stateOf(url), 'running', `a page at ${origin} stopped the job`);
    }
    // The dashboard's own origin may POST.
    await tab.goto(`${url}/`);
    const own = await tab.evaluate(async () => (await fetch('api/savepoints', { method: 'POST' })).status);
    assert.equal(own, 200);
  } finally {
    await browser.close();
    page.close();
  }

  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'UP' });
  assert.equal((await fetch(`${url}/health/ready`)).status, 200);
  const savepoint = await weir(['savepoint', '--url', url]);
  assert.equal(savepoint.code, 0, savepoint.stderr);
  const stop = await weir(['stop', '--savepoint', '--url', url]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(await run.exited, 0, run.stderr());
});

test('--ui-token: /api and /metrics need the bearer token, /health does not; weir savepoint sends it; it is never logged', async () => {
  const token = 'tok-3f9c2b7e1d';
  const run = await startJob(['--ui-port', '0'], { WEIR_UI_TOKEN: token });
  const url = await run.url();
  const bearer = { headers: { authorization: `Bearer ${token}` } };
  await until('the job running', async () => ((await stateOf(url, bearer)) === 'running' ? true : undefined));

  for (const path of ['/api/job', '/api/checkpoints', '/metrics']) {
    const refused = await fetch(`${url}${path}`);
    assert.equal(refused.status, 401, path);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    assert.equal((await fetch(`${url}${path}`, { headers: { authorization: 'Bearer wrong' } })).status, 401, path);
    assert.equal((await fetch(`${url}${path}`, bearer)).status, 200, path);
  }
  assert.equal((await fetch(`${url}/health`)).status, 200);
  assert.equal((await fetch(`${url}/health/ready`)).status, 200);
  assert.equal((await fetch(`${url}/api/savepoints`, { method: 'POST' })).status, 401);

  const withoutToken = await weir(['savepoint', '--url', url], { WEIR_UI_TOKEN: '' });
  assert.equal(withoutToken.code, 1);
  assert.match(withoutToken.stderr, /answered 401: POST \/api\/savepoints needs the job's token/);
  const withOption = await weir(['savepoint', '--url', url, '--token', token], { WEIR_UI_TOKEN: '' });
  assert.equal(withOption.code, 0, withOption.stderr);

  // The dashboard, opened with the token in its fragment.
  const browser = await launchBrowser();
  try {
    const tab = await browser.newPage();
    await tab.goto(`${url}/#token=${token}`);
    await until('the state on the page', async () => ((await tab.getByTestId('job-state').textContent()) === 'running' ? true : undefined));
  } finally {
    await browser.close();
  }

  const stop = await weir(['stop', '--savepoint', '--url', url], { WEIR_UI_TOKEN: token });
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(await run.exited, 0, run.stderr());
  assert.ok(!run.stderr().includes(token) && !run.stdout().includes(token), 'the token is never logged');
});

test('--ui-host beyond loopback without a token warns that the API has no authentication', async () => {
  const run = await startJob(['--ui-port', '0', '--ui-host', '0.0.0.0'], { WEIR_UI_TOKEN: '' });
  const [, port] = (await run.waitFor(/dashboard at http:\/\/0\.0\.0\.0:(\d+)\//)) as unknown as [string, string];
  await run.waitFor(/WARN: the REST API on 0\.0\.0\.0 has no authentication: anyone who reaches it can stop the job; give --ui-token/m);
  // Any Host is served there (the address is not loopback), but cross-site POSTs still are not.
  assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
  assert.equal((await fetch(`http://127.0.0.1:${port}/api/stop`, { method: 'POST', headers: { 'sec-fetch-site': 'cross-site' } })).status, 403);
  await until('the job running', async () => ((await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200 ? true : undefined));
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0, run.stderr());
});
