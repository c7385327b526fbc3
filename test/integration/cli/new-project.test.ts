/**
 * From "I found Weir" to a job of one's own, with no other tool: a fresh folder goes `weir init`
 * -> `npm install` (from the packed tarball) -> its own test and typecheck -> `weir kafka start` ->
 * `weir topic create` -> `weir produce` -> `npm start` (weir run) -> `weir consume` -> `weir verify`,
 * exactly once.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { until } from '../../harness/weir-run.ts';

const exec = promisify(execFile);
const LINES = 300;
const WORDS = ['to', 'be', 'or', 'not', 'that', 'is', 'the', 'question'];

test('weir init -> npm install -> kafka start -> topic create -> produce -> run -> consume -> verify, exact', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-new-project-'));
  const project = join(folder, 'my-job');
  // The Node that runs the tests runs everything (npm included), as a user's own would.
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}`, KAFKA_BROKERS: '' };
  delete env.NODE_TEST_CONTEXT; // the project's own `node --test` reports to its terminal, not to this runner
  const run = (command: string, args: string[], cwd = project) => exec(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 });
  const weir = (args: string[]) => run('npx', ['--no-install', 'weir', ...args]);
  let kafkaStarted = false;
  try {
    const { stdout: packed } = await run('npm', ['pack', '--silent', '--pack-destination', folder], repositoryRoot);
    const tarball = join(folder, packed.trim().split('\n').at(-1) as string);
    await run(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), 'init', project], folder);
    assert.deepEqual((await readdir(project)).sort(), [
      '.gitignore',
      'README.md',
      'job.ts',
      'package.json',
      'tsconfig.json',
      'weir.config.json',
      'words.test.ts',
      'words.ts',
    ]);
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball]);
    const ownTest = await run('npm', ['test']);
    assert.match(ownTest.stdout, /ℹ pass 1/);
    await run('npm', ['run', 'typecheck']);

    const port = await freePort();
    const brokers = `127.0.0.1:${port}`;
    await weir(['kafka', 'start', '--port', String(port), '--data-dir', join(folder, 'kafka')]);
    kafkaStarted = true;
    for (const topic of ['lines', 'word-counts']) await weir(['topic', 'create', topic, '--partitions', '2', '--brokers', brokers]);
    // One word a line, so each output record is one input line, and --field seq finds them all once.
    const input = Array.from({ length: LINES }, (_, seq) => JSON.stringify({ seq, text: WORDS[seq % WORDS.length] })).join('\n');
    await new Promise<void>((resolve, reject) => {
      const producer = spawn('npx', ['--no-install', 'weir', 'produce', 'lines', '--brokers', brokers], { cwd: project, env });
      let stderr = '';
      producer.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      producer.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`weir produce exited ${code}: ${stderr}`))));
      producer.stdin.end(`${input}\n`);
    });

    const job = spawn('npm', ['start', '--', '--brokers', brokers, '--ui-port', '0', '--checkpoint-interval', '300ms'], { cwd: project, env, detached: true });
    let jobOutput = '';
    job.stdout.on('data', (chunk: Buffer) => (jobOutput += chunk.toString()));
    job.stderr.on('data', (chunk: Buffer) => (jobOutput += chunk.toString()));
    try {
      await until(
        'the job has counted every line',
        async () => {
          const { stdout } = await weir(['consume', 'word-counts', '--brokers', brokers]);
          return stdout.trim().split('\n').filter(Boolean).length >= LINES ? true : undefined;
        },
        120_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the job said:\n${jobOutput}`);
      });
    } finally {
      process.kill(-(job.pid as number), 'SIGTERM');
      await new Promise((resolve) => job.once('exit', resolve));
    }

    const { stdout: consumed } = await weir(['consume', 'word-counts', '--brokers', brokers, '--json']);
    const counts = consumed
      .trim()
      .split('\n')
      .map((line) => JSON.parse((JSON.parse(line) as { value: string }).value) as { seq: number; word: string; count: number });
    assert.equal(counts.length, LINES);
    const last = new Map<string, number>();
    for (const record of counts) last.set(record.word, Math.max(last.get(record.word) ?? 0, record.count));
    assert.deepEqual(
      Object.fromEntries(last),
      Object.fromEntries(WORDS.map((word, i) => [word, Math.floor(LINES / WORDS.length) + (i < LINES % WORDS.length ? 1 : 0)])),
    );
    const verified = await weir(['verify', '--topic', 'word-counts', '--field', 'seq', '--expect', String(LINES), '--brokers', brokers]);
    assert.match(verified.stdout, /^OK$/m);
  } finally {
    if (kafkaStarted) await weir(['kafka', 'stop', '--data-dir', join(folder, 'kafka')]).catch(() => {});
    await rm(folder, { recursive: true, force: true });
  }
});
