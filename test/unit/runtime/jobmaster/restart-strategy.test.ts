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

test('the default is exponential-delay from 1 s, times 1.5, up to 1 min, with 20 restarts in a row', () => {
  const config = parseEnvironmentConfig({}).restartStrategy;
  assert.equal(config.type, 'exponential-delay');
  const exponential = new RestartStrategy({ ...config, jitter: 0 });
  // A broker down for minutes: the waits grow to a minute and the job keeps restarting.
  const delays: (number | undefined)[] = [];
  for (let i = 0, now = 0; i < 20; i++) {
    const delay = exponential.onFailure(now);
    delays.push(delay);
    now += (delay ?? 0) + 1_000;
  }
  assert.deepEqual(delays.slice(0, 5), [1000, 1500, 2250, 3375, 5063]);
  assert.ok(delays.every((delay) => delay !== undefined && delay <= 60_000));
  assert.equal(delays.at(-1), 60_000);
  // The 21st failure in a row is a crash loop: the job fails.
  assert.equal(exponential.onFailure(800_000), undefined);
  assert.match(exponential.describe(), /allows 20 restarts in a row \(failures less than 1h apart\)/);
});

test('exponential-delay: a healthy stretch resets the backoff and the restarts in a row', () => {
  const exponential = strategy({
    type: 'exponential-delay',
    initialBackoff: 100,
    multiplier: 2,
    jitter: 0,
    resetBackoffThreshold: 10_000,
    attemptsBeforeResetBackoff: 2,
  });
  assert.deepEqual([exponential.onFailure(0), exponential.onFailure(1), exponential.onFailure(2)], [100, 200, undefined]);
  const healthy = strategy({
    type: 'exponential-delay',
    initialBackoff: 100,
    multiplier: 2,
    jitter: 0,
    resetBackoffThreshold: 10_000,
    attemptsBeforeResetBackoff: 2,
  });
  assert.deepEqual([healthy.onFailure(0), healthy.onFailure(1), healthy.onFailure(20_000), healthy.onFailure(20_001)], [100, 200, 100, 200]);
});
