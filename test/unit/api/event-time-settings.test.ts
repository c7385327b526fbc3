/** Bad event-time settings are one clear WeirError naming the setting and the fix. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { CountTrigger } from '../../../src/api/windowing/count-trigger.ts';
import { EventTimeSessionWindows } from '../../../src/api/windowing/session-windows.ts';
import { SlidingEventTimeWindows } from '../../../src/api/windowing/sliding-windows.ts';
import { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from '../../../src/api/windowing/tumbling-windows.ts';
import { type DataGenRecord, dataGenSource } from '../../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../../src/connectors/discarding-sink.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { WatermarkStrategy } from '../../../src/core/event-time/watermark-strategy.ts';
import { OutputTag } from '../../../src/core/functions/output-tag.ts';
import type { Trigger } from '../../../src/core/windowing/trigger.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

function fails(action: () => unknown, code: string, message: RegExp, hint: RegExp): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    assert.match(error.hint ?? '', hint);
    return true;
  });
}

test('watermark strategies: a negative out-of-orderness, a zero idleness or interval', () => {
  fails(
    () => WatermarkStrategy.forBoundedOutOfOrderness(-5),
    'INVALID_TIME_SETTING',
    /forBoundedOutOfOrderness\(maxOutOfOrderness\) must be 0 or more, got -5/,
    /forBoundedOutOfOrderness\('5s'\)/,
  );
  fails(() => WatermarkStrategy.forBoundedOutOfOrderness('-5s'), 'INVALID_TIME_SETTING', /must be 0 or more, got "-5s"/, /5s/);
  fails(
    () => WatermarkStrategy.forMonotonousTimestamps().withIdleness(0),
    'INVALID_TIME_SETTING',
    /withIdleness\(timeout\) must be above 0/,
    /withIdleness\('30s'\)/,
  );
  fails(
    () => WatermarkStrategy.forMonotonousTimestamps().withWatermarkInterval('0ms'),
    'INVALID_TIME_SETTING',
    /withWatermarkInterval\(interval\) must be above 0/,
    /200ms/,
  );
  fails(
    () => WatermarkStrategy.forBoundedOutOfOrderness('soon'),
    'INVALID_DURATION',
    /forBoundedOutOfOrderness\(maxOutOfOrderness\): "soon" is not a duration/,
    /10s/,
  );
  assert.equal(WatermarkStrategy.forBoundedOutOfOrderness('5s').withIdleness('1m').idleTimeoutMs, 60_000);
});

test('windows: size 0, a slide larger than the size, a negative lateness, a zero gap, a count of 0', () => {
  fails(
    () => TumblingEventTimeWindows.of(0),
    'INVALID_TIME_SETTING',
    /TumblingEventTimeWindows\.of\(size\) must be above 0, got 0/,
    /TumblingEventTimeWindows\.of\('1m'\)/,
  );
  fails(() => TumblingProcessingTimeWindows.of('0s'), 'INVALID_TIME_SETTING', /TumblingProcessingTimeWindows\.of\(size\) must be above 0/, /window length/);
  fails(() => SlidingEventTimeWindows.of('1m', '2m'), 'INVALID_WINDOW', /the slide \(120000 ms\) is larger than the size \(60000 ms\)/, /at most the size/);
  fails(() => EventTimeSessionWindows.withGap(0), 'INVALID_TIME_SETTING', /EventTimeSessionWindows\.withGap\(gap\) must be above 0/, /withGap\('30m'\)/);
  fails(() => CountTrigger.of(0), 'INVALID_TRIGGER', /CountTrigger\.of\(maxCount\)/, /CountTrigger\.of\(100\)/);
  const keyed = new StreamExecutionEnvironment().fromSource(dataGenSource({ count: 1 })).keyBy((record) => record.key);
  fails(
    () => keyed.window(TumblingEventTimeWindows.of('1m')).allowedLateness(-1),
    'INVALID_TIME_SETTING',
    /allowedLateness\(lateness\) must be 0 or more, got -1/,
    /allowedLateness\('30s'\)/,
  );
  fails(() => keyed.countWindow(0), 'INVALID_TRIGGER', /maxCount must be a whole number/, /CountTrigger/);
});

test('session windows need merge in aggregate() and a trigger that can merge', () => {
  const keyed = new StreamExecutionEnvironment().fromSource(dataGenSource({ count: 1 })).keyBy((record) => record.key);
  const sessions = keyed.window(EventTimeSessionWindows.withGap('1m'));
  fails(
    () => sessions.aggregate({ createAccumulator: () => 0, add: (_value, acc: number) => acc + 1, getResult: (acc) => acc }),
    'AGGREGATE_MERGE_MISSING',
    /session windows merge, so the AggregateFunction needs merge\(a, b\)/,
    /merge: \(a, b\) => a \+ b/,
  );
  const noMerge: Trigger<unknown> = {
    onElement: () => 'CONTINUE',
    onEventTime: () => 'CONTINUE',
    onProcessingTime: () => 'CONTINUE',
    clear: () => {},
    toString: () => 'MyTrigger',
  };
  fails(() => sessions.trigger(noMerge), 'INVALID_TRIGGER', /MyTrigger cannot be used with EventTimeSessionWindows/, /canMerge/);
});

test('an event-time window or interval join without a watermark strategy upstream cannot be built', () => {
  const config = parseEnvironmentConfig({});
  const env = new StreamExecutionEnvironment();
  env
    .fromSource(dataGenSource({ count: 1 }), { name: 'payments' })
    .map((record) => record)
    .keyBy((record) => record.key)
    .window(TumblingEventTimeWindows.of('1m'))
    .reduce((a) => a, { name: 'per-minute' })
    .sinkTo(discardingSink());
  fails(
    () => buildJobGraph('job', env.graph, config),
    'NO_WATERMARKS',
    /operator "per-minute" is an event-time window \(TumblingEventTimeWindows\(60000\)\), but source "payments" upstream of it has no watermark strategy/,
    /watermarkStrategy: WatermarkStrategy\.forBoundedOutOfOrderness/,
  );
  const noWatermarks = new StreamExecutionEnvironment();
  const strategy = WatermarkStrategy.forMonotonousTimestamps<DataGenRecord>().withTimestampAssigner((record) => record.seq);
  const left = noWatermarks.fromSource(dataGenSource({ count: 1 }), { watermarkStrategy: strategy }).keyBy((record) => record.key);
  const right = noWatermarks
    .fromSource(dataGenSource({ count: 1 }), { name: 'right', watermarkStrategy: WatermarkStrategy.noWatermarks() })
    .keyBy((record) => record.key);
  left
    .intervalJoin(right)
    .between(-1, 1)
    .process({ processElement() {} })
    .sinkTo(discardingSink());
  fails(
    () => buildJobGraph('job', noWatermarks.graph, config),
    'NO_WATERMARKS',
    /is an interval join \(event time\), but source "right"/,
    /TumblingProcessingTimeWindows/,
  );
  // Processing-time windows need none.
  const processing = new StreamExecutionEnvironment();
  processing
    .fromSource(dataGenSource({ count: 1 }))
    .keyBy((record) => record.key)
    .window(TumblingProcessingTimeWindows.of('1m'))
    .reduce((a) => a)
    .sinkTo(discardingSink());
  assert.doesNotThrow(() => buildJobGraph('job', processing.graph, config));
});

test('interval join bounds and output tags', () => {
  const env = new StreamExecutionEnvironment();
  const keyed = env.fromSource(dataGenSource({ count: 1 })).keyBy((record) => record.key);
  fails(() => keyed.intervalJoin(keyed).between('5s', '-5s'), 'INVALID_JOIN_BOUNDS', /lower \(5000 ms\) is above upper \(-5000 ms\)/, /between\('-5s', '5s'\)/);
  fails(
    () =>
      keyed
        .intervalJoin(keyed)
        .between(0, 0)
        .lowerBoundExclusive()
        .process({ processElement() {} }),
    'INVALID_JOIN_BOUNDS',
    /leave no interval/,
    /widen/,
  );
  fails(() => new OutputTag(''), 'INVALID_OUTPUT_TAG', /non-empty id/, /new OutputTag/);
});
