import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OperatorMetricGroup } from '../../../../src/core/metrics/metric-group.ts';
import { userMetricGroup } from '../../../../src/runtime/operators/user-metric-group.ts';

/** An operator metric group that keeps what is registered, as the task's report reads it. */
function fakeGroup() {
  const counters = new Map<string, number>();
  const gauges = new Map<string, () => number>();
  const group: OperatorMetricGroup = {
    counter: (name) => ({ inc: (n = 1) => counters.set(name, (counters.get(name) ?? 0) + n) }),
    gauge: (name, read) => gauges.set(name, read),
  };
  const report = () => Object.fromEntries([...counters, ...[...gauges].map(([name, read]) => [name, read()] as const)]);
  return { group, report };
}

test('counters, gauges, histograms and meters of a user function, under user.<name>', () => {
  const { group, report } = fakeGroup();
  const metrics = userMetricGroup(group, 1, 'enrich');
  metrics.counter('lookups').inc(3);
  metrics.gauge('cache.size', () => 42);
  const latency = metrics.histogram('latency');
  for (let i = 1; i <= 100; i++) latency.update(i);
  const requests = metrics.meter('requests');
  requests.markEvent(120);
  assert.deepEqual(report(), {
    'user.lookups': 3,
    'user.cache.size': 42,
    'user.latency.count': 100,
    'user.latency/1/p50': 51,
    'user.latency/1/p95': 96,
    'user.latency/1/p99': 100,
    'user.latency/1/max': 100,
    'user.requests.count': 120,
    'user.requests.perSecond': 2,
  });
  assert.throws(() => metrics.counter('has space'), /operator "enrich": the metric name "has space" is not letters, digits/);
});

test('a histogram keeps its latest 1024 values', () => {
  const { group, report } = fakeGroup();
  const sizes = userMetricGroup(group, 0, 'x').histogram('size');
  for (let i = 0; i < 1024; i++) sizes.update(1_000_000);
  for (let i = 0; i < 1024; i++) sizes.update(5);
  assert.equal(report()['user.size/0/max'], 5);
  assert.equal(report()['user.size.count'], 2048);
});
