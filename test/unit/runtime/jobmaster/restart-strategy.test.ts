import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import { RestartStrategy } from '../../../../src/runtime/jobmaster/restart-strategy.ts';

const strategy = (restartStrategy: unknown) => new RestartStrategy(parseEnvironmentConfig({ restartStrategy }).restartStrategy);

test('none never restarts', () => {
  assert.equal(strategy({ type: 'none' }).onFailure(), undefined);
});

test('fixed-delay restarts its number of attempts, then gives up', () => {
  const fixed = strategy({ type: 'fixed-delay', attempts: 2, delay: '250ms' });
  assert.deepEqual([fixed.onFailure(), fixed.onFailure(), fixed.onFailure()], [250, 250, undefined]);
});

test('exponential-delay doubles up to the maximum and resets after a quiet period', () => {
  const exponential = strategy({ type: 'exponential-delay', initialBackoff: 100, maxBackoff: 350, multiplier: 2, jitter: 0, resetBackoffThreshold: 10_000 });
  assert.deepEqual([exponential.onFailure(0), exponential.onFailure(1), exponential.onFailure(2), exponential.onFailure(3)], [100, 200, 350, 350]);
  assert.equal(exponential.onFailure(20_000), 100);
});

test('failure-rate allows a number of failures per interval', () => {
  const rate = strategy({ type: 'failure-rate', maxFailuresPerInterval: 2, failureRateInterval: '1s', delay: 10 });
  assert.deepEqual([rate.onFailure(0), rate.onFailure(100), rate.onFailure(200)], [10, 10, undefined]);
  assert.equal(rate.onFailure(5_000), 10);
});
