import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger, LogLevel } from '../../../../src/core/logging/logger.ts';
import { CheckpointLogSummary } from '../../../../src/runtime/jobmaster/checkpoint-log-summary.ts';

function recordingLogger(): Logger & { lines: [LogLevel, string][] } {
  const lines: [LogLevel, string][] = [];
  const logger = {
    lines,
    debug: (message: string) => lines.push(['debug', message]),
    info: (message: string) => lines.push(['info', message]),
    warn: (message: string) => lines.push(['warn', message]),
    error: (message: string) => lines.push(['error', message]),
    isLevelEnabled: () => true,
    child: () => logger,
  };
  return logger;
}

test('a line per checkpoint at debug, a summary at info only when something happened', () => {
  const logger = recordingLogger();
  const summary = new CheckpointLogSummary(logger, 3_600_000);
  summary.completed(1, 12, 300);
  summary.completed(2, 15, 310);
  summary.aborted();
  summary.flush();
  summary.flush();
  summary.close();
  assert.deepEqual(logger.lines, [
    ['debug', 'checkpoint 1 completed in 12 ms (300 bytes of state)'],
    ['debug', 'checkpoint 2 completed in 15 ms (310 bytes of state)'],
    ['info', 'checkpoints: 2 completed, 1 aborted since the last summary; latest 2, 15ms, 310 bytes of state'],
  ]);
});

test('the summary gives the records a second in and out, and comes while records flow even without checkpoints', () => {
  const logger = recordingLogger();
  let rates = { inPerSecond: 0, outPerSecond: 0 };
  const summary = new CheckpointLogSummary(logger, 3_600_000, () => rates);
  summary.flush(); // nothing happened
  rates = { inPerSecond: 1200.4, outPerSecond: 1199.6 };
  summary.flush();
  summary.close();
  assert.deepEqual(logger.lines, [
    ['info', 'checkpoints: 0 completed, 0 aborted since the last summary; 1200 records/s in, 1200 out'],
    ['info', 'checkpoints: 0 completed, 0 aborted since the last summary; 1200 records/s in, 1200 out'],
  ]);
});
