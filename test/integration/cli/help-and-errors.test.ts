/**
 * Every command has --help, and a mistake is one clear line (plus a hint where there is a fix)
 * and a non-zero exit code, never a stack trace.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { weir } from '../../harness/cli.ts';

const commands: [string[], RegExp][] = [
  [
    [],
    /Commands:[\s\S]*run[\s\S]*savepoint[\s\S]*stop[\s\S]*checkpoints[\s\S]*verify[\s\S]*doctor[\s\S]*kafka[\s\S]*topic[\s\S]*produce[\s\S]*consume[\s\S]*demo/,
  ],
  [['init'], /\[folder\][\s\S]*must be empty/],
  [['topic'], /create[\s\S]*describe[\s\S]*list[\s\S]*delete/],
  [['topic', 'create'], /--partitions[\s\S]*--replication-factor[\s\S]*--config/],
  [['produce'], /key<TAB>value[\s\S]*--file[\s\S]*--transactional[\s\S]*--batch/],
  [['consume'], /--from[\s\S]*--partition[\s\S]*--max[\s\S]*--follow[\s\S]*--isolation/],
  [['run'], /--checkpoint-interval[\s\S]*--from-savepoint[\s\S]*--ui-port[\s\S]*--no-ui/],
  [['savepoint'], /--url/],
  [['stop'], /--savepoint[\s\S]*--drain[\s\S]*--url/],
  [['checkpoints'], /list[\s\S]*show/],
  [['checkpoints', 'list'], /<storage>[\s\S]*s3:\/\/<bucket>/],
  [['checkpoints', 'show'], /<path>/],
  [['verify'], /--topic[\s\S]*--field/],
  [['doctor'], /--job[\s\S]*--prefix[\s\S]*--abort/],
  [['kafka'], /start[\s\S]*stop[\s\S]*status[\s\S]*fetch/],
  [['kafka', 'start'], /--port[\s\S]*--transaction-version/],
  [['demo'], /--records[\s\S]*--rate[\s\S]*--crashes[\s\S]*--ui-port/],
];

test('every command answers --help with its options', async () => {
  for (const [command, expected] of commands) {
    const result = await weir([...command, '--help']);
    assert.equal(result.code, 0, `${command.join(' ')} --help: ${result.stderr}`);
    assert.match(result.stdout, /^Usage: weir/, command.join(' '));
    assert.match(result.stdout, expected, command.join(' '));
  }
});

const oneClearError = (result: { code: number; stdout: string; stderr: string }, pattern: RegExp, what: string) => {
  assert.notEqual(result.code, 0, `${what}: exit code`);
  assert.match(result.stderr, pattern, what);
  assert.doesNotMatch(result.stderr, /\n\s+at /, `${what}: no stack trace`);
};

test('mistakes are one clear error with a hint and a non-zero exit code', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-cli-errors-'));
  try {
    const unreachable = { KAFKA_BROKERS: '127.0.0.1:1' };
    oneClearError(await weir(['doctor'], unreachable), /^weir: cannot reach Kafka at 127\.0\.0\.1:1.*\nhint: /m, 'doctor, no broker');
    oneClearError(
      await weir(['verify', '--topic', 'orders', '--field', 'seq'], unreachable),
      /^weir: cannot reach Kafka at 127\.0\.0\.1:1.*\nhint: /m,
      'verify, no broker',
    );
    oneClearError(await weir(['checkpoints', 'show', folder]), /^weir: no _metadata in .*\nhint: /m, 'checkpoints show, not a checkpoint');
    oneClearError(
      await weir(['savepoint', '--url', 'http://127.0.0.1:1']),
      /^weir: no running job answers at http:\/\/127\.0\.0\.1:1.*\nhint: /m,
      'savepoint, no job',
    );
    oneClearError(await weir(['stop', '--url', 'http://127.0.0.1:1']), /--savepoint is required/, 'stop without --savepoint');
    oneClearError(await weir(['demo', '--records', 'many']), /'--records <n>' argument 'many' is invalid/, 'demo, bad count');
    oneClearError(await weir(['run']), /missing required argument 'job'/, 'run without a job');
    oneClearError(await weir(['frobnicate']), /unknown command 'frobnicate'/, 'unknown command');
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
