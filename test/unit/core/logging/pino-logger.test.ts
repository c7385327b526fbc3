import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createPinoLogger, logSettingsFromEnv } from '../../../../src/core/logging/pino-logger.ts';

function logTo(format: 'json' | 'pretty', level: 'debug' | 'info', write: (logger: ReturnType<typeof createPinoLogger>) => void): string {
  const folder = mkdtempSync(join(tmpdir(), 'weir-log-'));
  const file = join(folder, 'log');
  const fd = openSync(file, 'w');
  try {
    write(createPinoLogger({ format, level, destination: fd }));
  } finally {
    closeSync(fd);
  }
  const text = readFileSync(file, 'utf8');
  rmSync(folder, { recursive: true, force: true });
  return text;
}

test('json: one object a line with level, time and msg; below the level nothing; secrets redacted', () => {
  const text = logTo('json', 'info', (logger) => {
    logger.debug('checkpoint 1 completed');
    logger.info('starting job "x"');
    logger.warn('unreachable', { broker: '127.0.0.1:9092', connection: { sasl: { password: 'secret' } }, password: 'secret' });
  });
  const lines = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.equal(lines.length, 2);
  assert.deepEqual(
    lines.map((line) => [line.level, line.msg, typeof line.time]),
    [
      [30, 'starting job "x"', 'number'],
      [40, 'unreachable', 'number'],
    ],
  );
  assert.doesNotMatch(text, /secret/);
  assert.equal(lines[1]?.broker, '127.0.0.1:9092');
});

test('pretty: time, level and message on one line; debug shows at debug', () => {
  const text = logTo('pretty', 'debug', (logger) => logger.debug('checkpoint 1 completed in 3 ms'));
  assert.match(text, /^\[\d\d:\d\d:\d\d\.\d{3}\] DEBUG: checkpoint 1 completed in 3 ms$/m);
});

test('WEIR_LOG_LEVEL and WEIR_LOG_FORMAT, and one clear error for a bad value', () => {
  assert.deepEqual(logSettingsFromEnv({}), { level: 'info', format: 'pretty' });
  assert.deepEqual(logSettingsFromEnv({ WEIR_LOG_LEVEL: 'debug', WEIR_LOG_FORMAT: 'json' }), { level: 'debug', format: 'json' });
  assert.throws(() => logSettingsFromEnv({ WEIR_LOG_LEVEL: 'loud' }), /WEIR_LOG_LEVEL is "loud", not a log level/);
});
