/**
 * The topic tools against the real broker, with no other Kafka tool: `weir topic create`, `list`,
 * `describe` and `delete`; `weir produce` from a file and from stdin (JSON lines and key<TAB>value,
 * plain and in transactions); `weir consume` read_committed, from earliest or an offset, one
 * partition, --max, and --follow.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const brokers = testBrokers();
const env = { KAFKA_BROKERS: formatBootstrap(brokers) };

/** `weir ...` with lines on its stdin. */
function weirWithInput(args: string[], input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

test('weir topic create, list, describe, delete; produce and consume, plain and transactional', async () => {
  const topic = `weir-test-tools-${randomBytes(4).toString('hex')}`;
  const folder = await mkdtemp(join(tmpdir(), 'weir-tools-'));
  try {
    const created = await weir(['topic', 'create', topic, '--partitions', '3', '--config', 'retention.ms=86400000'], env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`^created topic ${topic} \\(3 partitions\\)$`, 'm'));
    const again = await weir(['topic', 'create', topic], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(`^weir: topic "${topic}" exists already$`, 'm'));
    const listed = await weir(['topic', 'list'], env);
    assert.match(listed.stdout, new RegExp(`^${topic}\\t3$`, 'm'));

    // From a file: JSON lines (no key: round-robin) and key<TAB>value lines (murmur2 by key), plainly.
    const file = join(folder, 'input.txt');
    await writeFile(file, `${Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? JSON.stringify({ seq: i }) : `k-${i}\t{"seq":${i}}`)).join('\n')}\n`);
    const produced = await weir(['produce', topic, '--file', file, '--batch', '7'], env);
    assert.equal(produced.code, 0, produced.stderr);
    assert.match(produced.stderr, new RegExp(`^produced 30 records to ${topic}$`, 'm'));
    // From stdin, in transactions of 5 lines.
    const piped = await weirWithInput(
      ['produce', topic, '--transactional', '--batch', '5'],
      `${Array.from({ length: 10 }, (_, i) => `t-${i}\tvalue-${i}`).join('\n')}\n`,
    );
    assert.equal(piped.code, 0, piped.stderr);
    assert.match(piped.stderr, /^produced 10 records to .* in 2 committed transactions$/m);

    // The exported reader takes host:port text, as every other entry point does.
    const records = await readTopic({ bootstrap: formatBootstrap(brokers), topic });
    assert.equal(records.length, 40);
    assert.ok(records.filter((record) => record.key?.toString() === 'k-1').length === 1);
    assert.ok(records.filter((record) => record.producerId >= 0n).length >= 10, 'the transactional ones');

    // consume: read_committed, every record with partition, offset, key and value.
    const consumed = await weir(['consume', topic], env);
    assert.equal(consumed.code, 0, consumed.stderr);
    const lines = consumed.stdout.trim().split('\n');
    assert.equal(lines.length, 40);
    assert.ok(
      lines.every((line) => /^[0-2]\t\d+\t[^\t]*\t.+$/.test(line)),
      lines.join('\n'),
    );
    assert.ok(
      lines.includes(
        `${records.find((record) => record.key?.toString() === 't-3')?.partition}\t${records.find((record) => record.key?.toString() === 't-3')?.offset}\tt-3\tvalue-3`,
      ),
    );
    const limited = await weir(['consume', topic, '--partition', '0', '--from', '1', '--max', '2', '--json'], env);
    const json = limited.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { partition: number; offset: string });
    assert.deepEqual(
      json.map((record) => [record.partition, record.offset]),
      [
        [0, '1'],
        [0, '2'],
      ],
    );

    // --follow prints what comes after it started.
    const follower = spawn(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), 'consume', topic, '--from', 'latest', '--follow'], {
      env: { ...process.env, ...env },
    });
    let followed = '';
    follower.stdout.on('data', (chunk: Buffer) => (followed += chunk.toString()));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await weirWithInput(['produce', topic], 'late\tarrival\n');
    await until('--follow prints the new record', async () => (followed.includes('late\tarrival') ? true : undefined), 30_000);
    follower.kill('SIGTERM');

    const described = await weir(['topic', 'describe', topic], env);
    assert.equal(described.code, 0, described.stderr);
    assert.match(described.stdout, new RegExp(`^topic ${topic}: 3 partitions$`, 'm'));
    assert.match(described.stdout, /^settings: .*retention\.ms=86400000/m);
    assert.match(described.stdout, /^0\t\d+\t\d+\t0\t\d+\t\d+$/m);

    const deleted = await weir(['topic', 'delete', topic], env);
    assert.equal(deleted.code, 0, deleted.stderr);
    const missing = await weir(['consume', topic], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`^weir: topic "${topic}" does not exist`, 'm'));
  } finally {
    await rm(folder, { recursive: true, force: true });
    await weir(['topic', 'delete', topic], env);
  }
});
