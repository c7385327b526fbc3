/** `weir run`'s options that decide how a job starts and fails: --no-restart, a taken --ui-port. */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';

const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('--no-restart: a job that fails once ends with that failure, after 0 restarts', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-no-restart-'));
  folders.push(folder);
  const result = await weir(['run', job, '--checkpoint-interval', '100ms', '--checkpoint-storage', join(folder, 'checkpoints'), '--no-restart', '--no-ui'], {
    KS_OUTPUT: join(folder, 'out'),
    KS_COUNT: '6000',
    KS_RATE: '6000',
    KS_FAIL_MARKER: join(folder, 'failed-once'),
    KS_FAIL_AFTER: '500',
  });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /restartStrategy none, no restart left\): .*injected failure after 500 records/);
  assert.doesNotMatch(result.stderr, /restarting in/);
});

test('--no-restart beside --restart-attempts or --restart-delay is refused, naming both', async () => {
  for (const other of [
    ['--restart-attempts', '2'],
    ['--restart-delay', '1s'],
  ]) {
    const result = await weir(['run', job, '--no-restart', ...other, '--no-ui']);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`option '--no-restart' cannot be used with option '${other[0]} <`));
  }
});

test('a taken --ui-port stops weir run before the job starts, naming --ui-port', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-port-taken-'));
  folders.push(folder);
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const result = await weir(['run', job, '--checkpoint-interval', '100ms', '--checkpoint-storage', join(folder, 'checkpoints'), '--ui-port', String(port)], {
      KS_OUTPUT: join(folder, 'out'),
      KS_COUNT: '3000',
      KS_RATE: '3000',
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`^weir: the dashboard and REST API port ${port} on 127\\.0\\.0\\.1 is taken`, 'm'));
    assert.match(result.stderr, /hint: pass --ui-port <another port>/);
    assert.doesNotMatch(result.stderr, /starting job|checkpoint \d+ completed/, 'the job never started');
  } finally {
    blocker.close();
  }
});

test('--ui-host an address this machine does not have: one clear error naming --ui-host', async () => {
  const result = await weir(['run', job, '--ui-host', '192.0.2.1', '--ui-port', '0']);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^weir: cannot listen on 192\.0\.2\.1:0 for the dashboard and REST API \(EADDRNOTAVAIL\)/m);
  assert.match(result.stderr, /hint: pass --ui-host an address of this machine/);
});

test('--config: a JSON file of the job’s settings, under the options; its mistakes are errors that name it', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-config-file-'));
  folders.push(folder);
  const file = join(folder, 'weir.config.json');
  // The file: restarts off and checkpoints into its folder; the command line sets the interval.
  await writeFile(
    file,
    JSON.stringify({ parallelism: 1, restartStrategy: { type: 'none' }, checkpointing: { storage: join(folder, 'from-file'), retained: 2 } }),
  );
  // 2,000 records a second: the failure comes 0.75 s into the input, several 100 ms checkpoints after its start even on a loaded machine.
  const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '3000', KS_RATE: '2000', KS_FAIL_MARKER: join(folder, 'failed-once'), KS_FAIL_AFTER: '1500' };
  const run = await weir(['run', job, '--config', file, '--checkpoint-interval', '100ms', '--log-level', 'debug', '--no-ui'], env);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /checkpoint \d+ completed/, 'the interval from the command line');
  assert.match(run.stderr, /restartStrategy none, no restart left/, 'restarts off, from the file');
  assert.ok(
    readdirSync(join(folder, 'from-file')).some((name) => name.startsWith('chk-')),
    'checkpoints in the file’s folder',
  );

  await writeFile(file, JSON.stringify({ checkpointing: { intervall: '1s', storage: join(folder, 'x') } }));
  const typo = await weir(['run', job, '--config', file, '--no-ui'], env);
  assert.equal(typo.code, 1);
  assert.match(
    typo.stderr,
    new RegExp(
      `^weir: invalid job configuration: .*checkpointing: Unrecognized key: "intervall" \\(the job's settings, ${file.replace(/[.]/g, '\\.')} and the command line together\\)$`,
      'm',
    ),
  );
  await writeFile(file, '{ parallelism: 2 }');
  const notJson = await weir(['run', job, '--config', file, '--no-ui'], env);
  assert.match(notJson.stderr, new RegExp(`^weir: --config ${file.replace(/[.]/g, '\\.')} is not JSON: `, 'm'));
  assert.match(notJson.stderr, /^hint: write the settings as a JSON object/m);
});
