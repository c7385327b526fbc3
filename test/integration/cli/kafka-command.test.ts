/**
 * `weir kafka start|status|stop` as a user runs them: a real broker in a fresh data folder on a
 * free port, the errors a user meets, and no process left behind.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { testBrokers } from '../../harness/kafka.ts';

const cli = (args: string[], env: NodeJS.ProcessEnv = process.env) => weir(args, env, true);

/** Pids of processes whose command line mentions this data folder. */
function processesUsing(dataDir: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dataDir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('weir kafka', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) {
      await cli(['kafka', 'stop', '--data-dir', folder]);
      await rm(folder, { recursive: true, force: true });
    }
  });

  test('start, status, start again, stop: a real broker and nothing left behind', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'weir-kafka-cli-'));
    folders.push(dataDir);
    const port = await freePort();

    const started = await cli([
      'kafka',
      'start',
      '--data-dir',
      dataDir,
      '--port',
      String(port),
      '--transaction-version',
      '1',
      '--transaction-max-timeout',
      '90s',
    ]);
    assert.equal(started.code, 0, started.stderr);
    assert.match(
      started.stdout,
      new RegExp(`Kafka 4\\.\\d+\\.\\d+ is running at 127\\.0\\.0\\.1:${port} .*transaction\\.version=1, transaction\\.max\\.timeout\\.ms=90000`),
    );
    assert.match(started.stdout, new RegExp(`export KAFKA_BROKERS=127\\.0\\.0\\.1:${port}`));

    const status = await cli(['kafka', 'status', '--data-dir', dataDir]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`running at 127\\.0\\.0\\.1:${port} \\(pid \\d+\\), Kafka 4\\.\\d+\\.\\d+, transaction\\.version=1`));

    const again = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(port)]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^weir: a local broker is already running at 127\.0\.0\.1:\d+ \(pid \d+/m);
    assert.match(again.stderr, /^hint: .*weir kafka stop/m);

    assert.ok(processesUsing(dataDir).length > 0, 'the broker process runs');
    const stopped = await cli(['kafka', 'stop', '--data-dir', dataDir]);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stdout, new RegExp(`stopped the broker at 127\\.0\\.0\\.1:${port}`));
    assert.deepEqual(processesUsing(dataDir), [], 'no process is left behind');

    const after = await cli(['kafka', 'status', '--data-dir', dataDir]);
    assert.equal(after.code, 3);
    assert.match(after.stderr, /no local broker is running/);

    // The data is kept: a second start reuses the formatted storage and its transaction.version.
    const restarted = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(port)]);
    assert.equal(restarted.code, 0, restarted.stderr);
    assert.match(restarted.stdout, /transaction\.version=1/);
    const mismatch = await cli(['kafka', 'stop', '--data-dir', dataDir]);
    assert.equal(mismatch.code, 0);
    const otherVersion = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(port), '--transaction-version', '2']);
    assert.equal(otherVersion.code, 1);
    assert.match(otherVersion.stderr, /formatted with transaction\.version=1, not 2/);
    assert.match(otherVersion.stderr, /hint: pass --wipe/);
    assert.deepEqual(processesUsing(dataDir), []);
  });

  test("commands run where `weir kafka start` ran use its broker when no brokers are given (the README's first commands)", async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'weir-kafka-here-'));
    const dataDir = join(cwd, '.weir', 'kafka');
    folders.push(dataDir);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.KAFKA_BROKERS;
    delete env.WEIR_KAFKA_CONFIG;
    const here = async (args: string[]) => {
      try {
        const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), ...args], {
          cwd,
          env,
          timeout: 180_000,
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        return error as { code: number; stdout: string; stderr: string };
      }
    };
    const before = await here(['topic', 'create', 'lines', '--partitions', '2']);
    assert.equal(before.code, 1);
    assert.match(before.stderr, /has no brokers[\s\S]*hint: .*weir kafka start/);
    const port = await freePort();
    const started = await here(['kafka', 'start', '--port', String(port)]);
    assert.equal(started.code, 0, started.stderr);
    const created = await here(['topic', 'create', 'lines', '--partitions', '2']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, new RegExp(`the local broker of \\.weir/kafka at 127\\.0\\.0\\.1:${port}`));
    const listed = await here(['topic', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^lines\b/m);
    assert.equal((await here(['kafka', 'stop'])).code, 0);
  });

  test('a taken port is one clear error with the fix', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'weir-kafka-cli-'));
    folders.push(dataDir);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const result = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(port)]);
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr.trim(),
        `weir: port ${port} on 127.0.0.1 is taken by another program\nhint: pass --port <another port>, or stop what listens on ${port}`,
      );
    } finally {
      server.close();
    }
  });

  test('without Java the error names what to install and the KAFKA_BROKERS alternative', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'weir-kafka-cli-'));
    folders.push(dataDir);
    const result = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(await freePort())], {
      ...process.env,
      PATH: dirname(process.execPath),
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^weir: Java \(java\) is not installed, and the local Kafka broker needs it$/m);
    assert.match(result.stderr, /^hint: install Java 17 or newer .*, or set KAFKA_BROKERS to use an existing cluster$/m);
  });

  test('a broker that fails during start-up: the error shows the end of its log', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'weir-kafka-cli-'));
    folders.push(dataDir);
    // A data folder that looks formatted but whose storage metadata is garbage: the broker itself fails.
    await mkdir(join(dataDir, 'kraft'), { recursive: true });
    await writeFile(join(dataDir, 'kraft', 'meta.properties'), 'this is not a properties file of Kafka\n');
    const format = { version: 1, clusterId: 'x', controllerPort: await freePort(), transactionVersion: 2, kafkaVersion: '4.1.1' };
    await writeFile(join(dataDir, 'format.json'), JSON.stringify(format));
    const result = await cli(['kafka', 'start', '--data-dir', dataDir, '--port', String(await freePort())]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^weir: the Kafka broker exited during start-up\. The end of .*broker\.log:$/m);
    assert.match(result.stderr, /ERROR Exiting Kafka due to fatal exception/);
    assert.match(result.stderr, /^hint: fix what the log names/m);
    assert.deepEqual(processesUsing(dataDir), []);
  });

  test('bad option values are refused before anything starts', async () => {
    const result = await cli(['kafka', 'start', '--transaction-max-timeout', 'soon']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /--transaction-max-timeout <duration>' argument 'soon' is invalid/);
  });
});

test('weir kafka status without --data-dir finds a broker that answers on the default port, whoever started it', async () => {
  const [broker] = testBrokers();
  // A plain TCP relay on 9092 to the test broker stands for a broker started by another tool.
  const relay = createServer((socket) => {
    const upstream = connect(broker?.port as number, broker?.host);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    relay.once('error', reject);
    relay.listen(9092, '127.0.0.1', () => resolve());
  });
  const cwd = await mkdtemp(join(tmpdir(), 'weir-status-'));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), 'kafka', 'status'], { cwd });
    assert.match(stdout, /^a Kafka broker answers at 127\.0\.0\.1:9092 \(transaction\.version=\d\), but not one started with data .*: give its --data-dir/m);
  } finally {
    relay.close();
    await rm(cwd, { recursive: true, force: true });
  }
});
