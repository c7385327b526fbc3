import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WatermarkStrategy } from '../../../../src/core/event-time/watermark-strategy.ts';
import { SourceWatermarks } from '../../../../src/runtime/watermarks/source-watermarks.ts';
import type { WatermarkEvent } from '../../../../src/runtime/watermarks/status-watermark-valve.ts';

interface Event {
  ts: number;
}
const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Event>(100).withTimestampAssigner((event) => event.ts);
const events = (...timestamps: number[]) => timestamps.map((ts) => ({ ts }));
const watermarks = (out: WatermarkEvent[]) => out.filter((event) => event.kind === 'watermark').map((event) => (event as { watermark: number }).watermark);

test('per-split watermarks: the subtask emits the minimum, per watermark interval', () => {
  const source = new SourceWatermarks({ strategy: strategy as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: ['a', 'b'], now: 0 });
  const out: WatermarkEvent[] = [];
  source.start(out);
  const timestamps = source.assign(events(1000, 5000, 1100), undefined, ['a', 'b', 'a'], out);
  assert.deepEqual(timestamps, [1000, 5000, 1100]);
  assert.deepEqual(out, [], 'a periodic generator emits only on the interval');
  source.onProcessingTime(199, out);
  assert.deepEqual(out, []);
  source.onProcessingTime(200, out);
  assert.deepEqual(watermarks(out), [999], 'split a (1100 - 100 - 1) holds split b (4899) back');
  out.length = 0;
  source.assign(events(6000), undefined, ['a'], out);
  source.onProcessingTime(400, out);
  assert.deepEqual(watermarks(out), [4899]);
});

test('a split without records holds the watermark back until the idleness timeout, then is left out', () => {
  const idle = strategy.withIdleness(1000);
  const source = new SourceWatermarks({ strategy: idle as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: ['busy', 'quiet'], now: 0 });
  const out: WatermarkEvent[] = [];
  source.start(out);
  let now = 0;
  let seen: number[] = [];
  for (let ts = 1000; ts <= 5000; ts += 200) {
    source.assign(events(ts), undefined, ['busy'], out);
    now += 200;
    source.onProcessingTime(now, out);
    seen = watermarks(out);
    if (seen.length > 0) break;
  }
  // The quiet split was idle from the first check on: after the timeout the busy split's watermark passes.
  assert.ok(seen.length > 0, 'the watermark advanced once the quiet split was idle');
  assert.ok(now >= 1000, `not before the timeout (${now} ms)`);
  assert.equal(source.currentWatermark > 0, true);
  // A record of the quiet split makes it active again at once.
  out.length = 0;
  source.assign(events(100), undefined, ['quiet'], out);
  assert.deepEqual(out, [], 'the subtask stayed active: nothing to announce');
});

test('every split idle: the subtask is idle; a record makes it active before its batch goes out', () => {
  const idle = strategy.withIdleness(100);
  const source = new SourceWatermarks({ strategy: idle as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: ['a'], now: 0 });
  const out: WatermarkEvent[] = [];
  source.start(out);
  source.onProcessingTime(200, out);
  source.onProcessingTime(400, out);
  assert.deepEqual(out, [{ kind: 'idle' }]);
  out.length = 0;
  source.assign(events(50), undefined, ['a'], out);
  assert.deepEqual(out, [{ kind: 'active' }]);
});

test('a subtask without splits is idle from the start; a reader naming no splits has one output', () => {
  const none = new SourceWatermarks({ strategy: strategy as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: [], now: 0 });
  const out: WatermarkEvent[] = [];
  none.start(out);
  assert.deepEqual(out, [{ kind: 'idle' }]);
  const whole = new SourceWatermarks({ strategy: strategy as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: undefined, now: 0 });
  const out2: WatermarkEvent[] = [];
  whole.start(out2);
  whole.assign(events(1000, 900), undefined, undefined, out2);
  whole.onProcessingTime(1000, out2);
  assert.deepEqual(watermarks(out2), [899]);
});

test("timestamps: the source's own record timestamps without an assigner; a clear error when there are none", () => {
  const own = WatermarkStrategy.forMonotonousTimestamps<Event>();
  const source = new SourceWatermarks({ strategy: own as WatermarkStrategy<unknown>, sourceName: 'kafka source (t)', splitIds: undefined, now: 0 });
  const out: WatermarkEvent[] = [];
  assert.deepEqual(source.assign(events(1, 2), [10, 20], undefined, out), [10, 20]);
  assert.throws(
    () => source.assign(events(1), undefined, undefined, out),
    (error: Error & { code?: string; hint?: string }) =>
      error.code === 'NO_TIMESTAMP_ASSIGNER' && /kafka source \(t\)/.test(error.message) && /withTimestampAssigner/.test(error.hint ?? ''),
  );
  const bad = new SourceWatermarks({
    strategy: WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner(() => Number.NaN) as WatermarkStrategy<unknown>,
    sourceName: 'gen',
    splitIds: undefined,
    now: 0,
  });
  assert.throws(
    () => bad.assign(events(1), undefined, undefined, out),
    (error: Error & { code?: string }) => error.code === 'INVALID_TIMESTAMP' && /returned NaN/.test(error.message),
  );
});

test('a punctuated generator emits on events, after the batch', () => {
  const punctuated = WatermarkStrategy.forGenerator<Event>(() => ({
    onEvent: (event, timestamp, output) => {
      if (event.ts % 1000 === 0) output.emitWatermark(timestamp - 1);
    },
    onPeriodicEmit: () => {},
  })).withTimestampAssigner((event) => event.ts);
  const source = new SourceWatermarks({ strategy: punctuated as WatermarkStrategy<unknown>, sourceName: 'p', splitIds: undefined, now: 0 });
  const out: WatermarkEvent[] = [];
  source.assign(events(500, 1000, 1500, 2000, 2500), undefined, undefined, out);
  assert.deepEqual(watermarks(out), [1999]);
});

test('a finished split is released: it no longer holds the watermark back; the last one gone, the subtask is idle', () => {
  const source = new SourceWatermarks({ strategy: strategy as WatermarkStrategy<unknown>, sourceName: 'test', splitIds: ['a', 'b'], now: 0 });
  const out: WatermarkEvent[] = [];
  source.start(out);
  source.assign(events(1000, 9000), undefined, ['a', 'b'], out);
  source.onProcessingTime(200, out);
  assert.deepEqual(watermarks(out), [899]);
  out.length = 0;
  source.releaseSplits(['a'], out);
  assert.deepEqual(watermarks(out), [8899]);
  out.length = 0;
  source.releaseSplits(['b'], out);
  assert.deepEqual(out, [{ kind: 'idle' }]);
});
