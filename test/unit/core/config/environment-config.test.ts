import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

const fails = (input: unknown, pattern: RegExp) =>
  assert.throws(
    () => parseEnvironmentConfig(input),
    (error: unknown) => error instanceof WeirError && error.code === 'INVALID_CONFIG' && pattern.test(error.message) && error.hint !== undefined,
  );

test('defaults', () => {
  const config = parseEnvironmentConfig({ checkpointing: { interval: '100ms', storage: 'chk' } });
  assert.equal(config.parallelism, 1);
  assert.equal(config.maxParallelism, 128);
  assert.equal(config.checkpointing?.interval, 100);
  assert.equal(config.checkpointing?.mode, 'exactly-once');
  assert.equal(config.checkpointing?.timeout, 600_000);
  assert.deepEqual(config.restartStrategy, {
    type: 'exponential-delay',
    initialBackoff: 1000,
    maxBackoff: 60_000,
    multiplier: 1.5,
    resetBackoffThreshold: 3_600_000,
    jitter: 0.1,
    attemptsBeforeResetBackoff: 20,
  });
});

test("the workers' heap limits: a 24 MB young generation and no old-generation limit by default; bad values name the setting", () => {
  assert.deepEqual(parseEnvironmentConfig({}).workerHeap, { youngGenerationMb: 24 });
  assert.deepEqual(parseEnvironmentConfig({ workerHeap: { oldGenerationMb: 512 } }).workerHeap, { youngGenerationMb: 24, oldGenerationMb: 512 });
  fails({ workerHeap: { youngGenerationMb: 0 } }, /workerHeap\.youngGenerationMb/);
  fails({ workerHeap: { youngGenerationMB: 64 } }, /workerHeap/);
});

test('a negative or zero checkpoint interval names the setting', () => {
  fails({ checkpointing: { interval: -5, storage: 'chk' } }, /checkpointing\.interval/);
  fails({ checkpointing: { interval: '0ms', storage: 'chk' } }, /checkpointing\.interval: must be above 0/);
  fails({ checkpointing: { interval: 'often', storage: 'chk' } }, /checkpointing\.interval.*not a duration/);
});

test('maxParallelism below parallelism is refused with the fix', () => {
  fails({ parallelism: 8, maxParallelism: 4 }, /maxParallelism: maxParallelism \(4\) is below parallelism \(8\); raise maxParallelism/);
});

test('unknown options and bad restart strategies are refused', () => {
  fails({ paralelism: 2 }, /paralelism/);
  fails({ restartStrategy: { type: 'sometimes' } }, /restartStrategy/);
  fails({ checkpointing: { interval: '1s' } }, /checkpointing\.storage/);
});

test('incremental checkpoints take one pending checkpoint at a time: maxConcurrent above 1 is refused naming both settings', () => {
  // With two pending, a checkpoint could complete before the barrier of a later one that adds to an
  // older base: the change tracking would drop what that delta needs, and retention the files its chain names.
  assert.throws(
    () => parseEnvironmentConfig({ checkpointing: { interval: 1000, storage: '/tmp/x', incremental: true, maxConcurrent: 2 } }),
    (error: Error) => /checkpointing\.maxConcurrent: .*incremental.*set checkpointing\.maxConcurrent to 1/.test(error.message),
  );
  assert.doesNotThrow(() => parseEnvironmentConfig({ checkpointing: { interval: 1000, storage: '/tmp/x', incremental: true, maxConcurrent: 1 } }));
  assert.doesNotThrow(() => parseEnvironmentConfig({ checkpointing: { interval: 1000, storage: '/tmp/x', maxConcurrent: 2 } }));
});
