import { WeirError } from '../../core/errors/weir-error.ts';
import type { MetricHistogram, MetricMeter, OperatorMetricGroup, UserMetricGroup } from '../../core/metrics/metric-group.ts';

const RESERVOIR = 1024;
const METER_WINDOW_SECONDS = 60;

/**
 * A user function's metric group (core's UserMetricGroup) on its operator's metrics: every name
 * under `user.`. A histogram keeps its latest 1024 values and reports p50, p95, p99 and max per
 * subtask (`user.<name>/<subtask>/p99`: percentiles do not add up over subtasks) and a count; a
 * meter reports a count and its rate over the last minute (`user.<name>.perSecond`, which does).
 */
export function userMetricGroup(metrics: OperatorMetricGroup, subtaskIndex: number, operatorName: string): UserMetricGroup {
  const checked = (name: string): string => {
    if (!/^[A-Za-z0-9_.-]+$/.test(name)) {
      throw new WeirError('INVALID_CONFIG', `operator "${operatorName}": the metric name ${JSON.stringify(name)} is not letters, digits, _, - and . only`, {
        hint: 'name it like records_enriched or lookup.latency',
        fault: 'user',
      });
    }
    return `user.${name}`;
  };
  return {
    counter: (name) => metrics.counter(checked(name)),
    gauge: (name, read) => metrics.gauge(checked(name), read),
    histogram: (name): MetricHistogram => {
      const key = checked(name);
      const values: number[] = [];
      let next = 0;
      const count = metrics.counter(`${key}.count`);
      const sorted = () => [...values].sort((a, b) => a - b);
      const quantile = (q: number) => () => {
        const all = sorted();
        return all.length === 0 ? 0 : (all[Math.min(all.length - 1, Math.floor(q * all.length))] as number);
      };
      metrics.gauge(`${key}/${subtaskIndex}/p50`, quantile(0.5));
      metrics.gauge(`${key}/${subtaskIndex}/p95`, quantile(0.95));
      metrics.gauge(`${key}/${subtaskIndex}/p99`, quantile(0.99));
      metrics.gauge(`${key}/${subtaskIndex}/max`, () => values.reduce((top, value) => Math.max(top, value), 0));
      return {
        update(value: number) {
          if (values.length < RESERVOIR) values.push(value);
          else values[next] = value;
          next = (next + 1) % RESERVOIR;
          count.inc();
        },
      };
    },
    meter: (name): MetricMeter => {
      const key = checked(name);
      const count = metrics.counter(`${key}.count`);
      // Events per second of the last minute, a bucket a second.
      const buckets = new Array<number>(METER_WINDOW_SECONDS).fill(0);
      let bucketSecond = Math.floor(Date.now() / 1000);
      const advance = (now: number) => {
        const second = Math.floor(now / 1000);
        for (let s = bucketSecond + 1; s <= second && s <= bucketSecond + METER_WINDOW_SECONDS; s++) buckets[s % METER_WINDOW_SECONDS] = 0;
        bucketSecond = Math.max(bucketSecond, second);
      };
      metrics.gauge(`${key}.perSecond`, () => {
        advance(Date.now());
        return buckets.reduce((sum, n) => sum + n, 0) / METER_WINDOW_SECONDS;
      });
      return {
        markEvent(n = 1) {
          advance(Date.now());
          buckets[bucketSecond % METER_WINDOW_SECONDS] = (buckets[bucketSecond % METER_WINDOW_SECONDS] as number) + n;
          count.inc(n);
        },
      };
    },
  };
}
