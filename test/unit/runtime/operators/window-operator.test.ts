import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import type { KeyedStream, SingleOutputStreamOperator } from '../../../../src/api/data-stream.ts';
import { StreamExecutionEnvironment } from '../../../../src/api/stream-execution-environment.ts';
import { ContinuousEventTimeTrigger } from '../../../../src/api/windowing/continuous-event-time-trigger.ts';
import { CountTrigger } from '../../../../src/api/windowing/count-trigger.ts';
import { EventTimeSessionWindows } from '../../../../src/api/windowing/session-windows.ts';
import { SlidingEventTimeWindows } from '../../../../src/api/windowing/sliding-windows.ts';
import { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from '../../../../src/api/windowing/tumbling-windows.ts';
import { dataGenSource } from '../../../../src/connectors/datagen/datagen-source.ts';
import { WatermarkStrategy } from '../../../../src/core/event-time/watermark-strategy.ts';
import { OutputTag } from '../../../../src/core/functions/output-tag.ts';
import type { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import type { TimeWindow } from '../../../../src/core/windowing/window.ts';
import type { OperatorNode } from '../../../../src/graph/stream-graph.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../../src/state/key-group-range-assignment.ts';
import { OperatorHarness } from './operator-harness.ts';

interface Event {
  key: string;
  ts: number;
  amount: number;
}

interface Total {
  key: string;
  start: number;
  end: number;
  sum: number;
  count: number;
}

/** The operator the API builds for `build(keyedStream)` (a fresh one per call, as each subtask gets). */
function operatorOf<R>(build: (keyed: KeyedStream<Event, string>) => SingleOutputStreamOperator<R>): () => StreamOperator<Event, R> {
  const env = new StreamExecutionEnvironment();
  build(
    env
      .fromSource(dataGenSource<Event>({ count: 1, generate: () => ({ key: 'a', ts: 0, amount: 0 }) }), {
        watermarkStrategy: WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((event) => event.ts),
      })
      .keyBy((event) => event.key),
  );
  const node = env.graph.nodes.at(-1) as OperatorNode;
  return node.createOperator as () => StreamOperator<Event, R>;
}

const sumPerWindow = (keyed: KeyedStream<Event, string>, windowed = keyed.window(TumblingEventTimeWindows.of(1000))) =>
  windowed.aggregate(
    {
      createAccumulator: () => ({ sum: 0, count: 0 }),
      add: (event: Event, acc: { sum: number; count: number }) => ({ sum: acc.sum + event.amount, count: acc.count + 1 }),
      getResult: (acc) => acc,
      merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
    },
    {
      process(key, context, [result], out) {
        out.collect({ key, start: context.window.start, end: context.window.end, sum: result?.sum ?? 0, count: result?.count ?? 0 } satisfies Total);
      },
    },
  );

const ev = (key: string, ts: number, amount = 1): Event => ({ key, ts, amount });
const stamps = (events: Event[]) => events.map((event) => event.ts);
const sorted = (totals: Total[]) => [...totals].sort((a, b) => a.key.localeCompare(b.key) || a.start - b.start);

test('tumbling event-time windows fire when the watermark passes their end, with the window end - 1 as timestamp', async () => {
  const harness = await new OperatorHarness(operatorOf(sumPerWindow)()).open();
  const input = [ev('a', 100, 1), ev('b', 1500, 2), ev('a', 900, 3), ev('a', 1000, 4), ev('b', 200, 5)];
  const processed = await harness.process(input, stamps(input));
  assert.deepEqual(processed.records, []);
  assert.deepEqual((await harness.watermark(998)).records, [], 'the window [0, 1000) ends at 999');
  const fired = await harness.watermark(999);
  assert.deepEqual(sorted(fired.records as Total[]), [
    { key: 'a', start: 0, end: 1000, sum: 4, count: 2 },
    { key: 'b', start: 0, end: 1000, sum: 5, count: 1 },
  ]);
  assert.deepEqual(fired.timestamps, [999, 999]);
  const rest = await harness.watermark(Number.POSITIVE_INFINITY);
  assert.deepEqual(sorted(rest.records as Total[]), [
    { key: 'a', start: 1000, end: 2000, sum: 4, count: 1 },
    { key: 'b', start: 1000, end: 2000, sum: 2, count: 1 },
  ]);
  assert.ok(harness.backend.isEmpty(), 'windows and their timers are cleaned up');
});

test('the same input in any arrival order gives the same window results', async () => {
  const input: Event[] = [];
  for (let i = 0; i < 600; i++) input.push(ev(`k${i % 7}`, i * 13 + ((i * 31) % 50), (i % 5) + 1));
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const runs: string[] = [];
  for (let round = 0; round < 5; round++) {
    // Shuffle within blocks of 20 records (260 ms of event time), with watermarks 300 ms behind.
    const order = [...input];
    for (let block = 0; block < order.length; block += 20) {
      for (let i = Math.min(block + 19, order.length - 1); i > block; i--) {
        const j = block + Math.floor(random() * (i - block + 1));
        [order[i], order[j]] = [order[j] as Event, order[i] as Event];
      }
    }
    for (const build of [sumPerWindow, (keyed: KeyedStream<Event, string>) => sumPerWindow(keyed, keyed.window(SlidingEventTimeWindows.of(1000, 250)))]) {
      const harness = await new OperatorHarness(operatorOf(build)()).open();
      const results: Total[] = [];
      let max = Number.NEGATIVE_INFINITY;
      for (let at = 0; at < order.length; at += 20) {
        const batch = order.slice(at, at + 20);
        results.push(...((await harness.process(batch, stamps(batch))).records as Total[]));
        for (const event of batch) max = Math.max(max, event.ts);
        results.push(...((await harness.watermark(max - 301)).records as Total[]));
      }
      results.push(...((await harness.watermark(Number.POSITIVE_INFINITY)).records as Total[]));
      assert.equal(harness.counters.get('numLateRecordsDropped') ?? 0, 0);
      runs.push(JSON.stringify(sorted(results)));
    }
  }
  assert.equal(new Set(runs.filter((_, i) => i % 2 === 0)).size, 1, 'tumbling: every order the same');
  assert.equal(new Set(runs.filter((_, i) => i % 2 === 1)).size, 1, 'sliding: every order the same');
  const tumbling = JSON.parse(runs[0] as string) as Total[];
  assert.equal(
    tumbling.reduce((sum, total) => sum + total.count, 0),
    600,
  );
  const sliding = JSON.parse(runs[1] as string) as Total[];
  assert.equal(
    sliding.reduce((sum, total) => sum + total.count, 0),
    2400,
    'each record in size / slide = 4 sliding windows',
  );
});

test('allowed lateness: a late record re-fires its window; past the lateness it goes to the late side output', async () => {
  const late = new OutputTag<Event>('late');
  const create = operatorOf((keyed) => sumPerWindow(keyed, keyed.window(TumblingEventTimeWindows.of(1000)).allowedLateness(500).sideOutputLateData(late)));
  const harness = await new OperatorHarness(create()).open();
  const first = [ev('a', 100, 1)];
  await harness.process(first, stamps(first));
  assert.deepEqual(
    ((await harness.watermark(1200)).records as Total[]).map((total) => total.sum),
    [1],
  );
  const withinLateness = [ev('a', 200, 10)];
  const refired = await harness.process(withinLateness, stamps(withinLateness));
  assert.deepEqual(
    (refired.records as Total[]).map((total) => total.sum),
    [11],
    'fired again at once, with the late record',
  );
  await harness.watermark(1499); // the window's state is gone at 999 + 500
  const tooLate = [ev('a', 300, 100), ev('a', 1600, 1)];
  const processed = await harness.process(tooLate, stamps(tooLate));
  assert.deepEqual(processed.records, []);
  assert.deepEqual(harness.sideOutputs.get('late'), [{ record: ev('a', 300, 100), timestamp: 300 }]);
  assert.equal(harness.counters.get('numLateRecordsDropped') ?? 0, 0);
});

test('without a late side output, late records are counted in numLateRecordsDropped', async () => {
  const harness = await new OperatorHarness(operatorOf(sumPerWindow)()).open();
  await harness.watermark(5000);
  const late = [ev('a', 10), ev('b', 4999), ev('c', 5000)];
  await harness.process(late, stamps(late));
  assert.equal(harness.counters.get('numLateRecordsDropped'), 2);
  assert.equal(harness.sideOutputs.size, 0);
  assert.deepEqual(
    ((await harness.watermark(Number.POSITIVE_INFINITY)).records as Total[]).map((total) => total.key),
    ['c'],
  );
});

test('session windows merge as records arrive, out of order too; state and trigger state merge', async () => {
  const create = operatorOf((keyed) => sumPerWindow(keyed, keyed.window(EventTimeSessionWindows.withGap(100))));
  const harness = await new OperatorHarness(create()).open();
  // Two sessions for a ([0, 150) and [200, 350)), joined later by a record in the gap between them.
  const input = [ev('a', 0, 1), ev('a', 50, 2), ev('a', 200, 4), ev('a', 250, 8), ev('b', 0, 16), ev('b', 400, 64)];
  await harness.process(input, stamps(input));
  const bridge = [ev('a', 140, 32)];
  await harness.process(bridge, stamps(bridge));
  const fired = (await harness.watermark(Number.POSITIVE_INFINITY)).records as Total[];
  assert.deepEqual(sorted(fired), [
    { key: 'a', start: 0, end: 350, sum: 47, count: 5 },
    { key: 'b', start: 0, end: 100, sum: 16, count: 1 },
    { key: 'b', start: 400, end: 500, sum: 64, count: 1 },
  ]);
  assert.ok(harness.backend.isEmpty(), 'merged windows leave no timers or state behind');

  // A count trigger on sessions: its count merges with the windows.
  const counted = operatorOf((keyed) =>
    keyed
      .window(EventTimeSessionWindows.withGap(100))
      .trigger(CountTrigger.of(3))
      .process<number>({
        process(_key, _context, elements, out) {
          out.collect(elements.length);
        },
      }),
  );
  const sessions = await new OperatorHarness(counted()).open();
  const two = [ev('a', 0), ev('a', 150)];
  assert.deepEqual((await sessions.process(two, stamps(two))).records, [], 'two sessions of one record each');
  const bridge2 = [ev('a', 80)];
  assert.deepEqual((await sessions.process(bridge2, stamps(bridge2))).records, [3], 'merged: their counts add up to 3, which fires');
  const more = [ev('a', 200), ev('a', 210), ev('a', 220)];
  assert.deepEqual((await sessions.process(more, stamps(more))).records, [6], 'the count starts again after firing; FIRE keeps the contents');
});

test('a count trigger fires every n records; a continuous trigger fires early every interval and at the end', async () => {
  const counted = await new OperatorHarness(
    operatorOf((keyed) =>
      keyed.countWindow(2).process<string>({
        process(key, _context, elements, out) {
          out.collect(`${key}:${elements.map((event) => event.amount).join(',')}`);
        },
      }),
    )(),
  ).open();
  const input = [ev('a', 1, 1), ev('b', 1, 2), ev('a', 1, 3), ev('a', 1, 4), ev('a', 1, 5)];
  assert.deepEqual((await counted.process(input, stamps(input))).records, ['a:1,3', 'a:4,5']);

  const early = await new OperatorHarness(
    operatorOf((keyed) => sumPerWindow(keyed, keyed.window(TumblingEventTimeWindows.of(10_000)).trigger(ContinuousEventTimeTrigger.of(1000))))(),
  ).open();
  const events = [ev('a', 100, 1), ev('a', 1500, 2), ev('a', 2500, 4)];
  await early.process(events, stamps(events));
  assert.deepEqual(
    ((await early.watermark(1000)).records as Total[]).map((total) => total.sum),
    [7],
    'fires at 1000 with everything so far',
  );
  assert.deepEqual(
    ((await early.watermark(2000)).records as Total[]).map((total) => total.sum),
    [7],
  );
  assert.deepEqual(
    ((await early.watermark(Number.POSITIVE_INFINITY)).records as Total[]).map((total) => total.sum),
    [7, 7, 7, 7, 7, 7, 7, 7],
    'every interval up to the end: 3000 ... 9000, then 9999 (the end)',
  );
});

test('processing-time windows fire on the clock; their timers are asked for', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 10_000 });
  const harness = await new OperatorHarness(
    operatorOf((keyed) => keyed.window(TumblingProcessingTimeWindows.of(1000)).reduce((a, b) => ({ key: a.key, ts: a.ts, amount: a.amount + b.amount })))(),
  ).open();
  await harness.process([ev('a', 0, 1), ev('a', 0, 2)]);
  assert.ok(harness.processingTimeRequests.length > 0 && harness.processingTimeRequests.every((time) => time === 10_999));
  t.mock.timers.tick(500);
  await harness.process([ev('a', 0, 4)]);
  assert.deepEqual((await harness.processingTime(10_998)).records, []);
  const fired = await harness.processingTime(10_999);
  assert.deepEqual(fired.records, [ev('a', 0, 7)]);
  assert.deepEqual(fired.timestamps, [10_999]);
  mock.timers.reset();
});

test('pending windows and timers move with their key groups: snapshot at parallelism 2, restore at 3, same results', async () => {
  const input: Event[] = [];
  for (let i = 0; i < 400; i++) input.push(ev(`user-${i % 37}`, i * 10, (i % 3) + 1));
  const create = operatorOf(sumPerWindow);
  // Uninterrupted, one subtask.
  const whole = await new OperatorHarness(create()).open();
  const expected: Total[] = [];
  expected.push(...((await whole.process(input, stamps(input))).records as Total[]));
  expected.push(...((await whole.watermark(Number.POSITIVE_INFINITY)).records as Total[]));

  // Two subtasks take the first half and fire what the watermark 1500 passes; the rest is pending.
  const range = (index: number, parallelism: number) => computeKeyGroupRangeForOperatorIndex(128, parallelism, index);
  const owner = (key: string, parallelism: number) =>
    [...Array(parallelism).keys()].find((index) => {
      const probe = new OperatorHarness(create(), { range: range(index, parallelism) });
      try {
        probe.backend.setCurrentKey(key);
        return true;
      } catch {
        return false;
      }
    }) as number;
  const results: Total[] = [];
  const two = await Promise.all([0, 1].map((index) => new OperatorHarness(create(), { range: range(index, 2) }).open(index, 2)));
  const firstHalf = input.slice(0, 200);
  for (const [index, harness] of two.entries()) {
    const mine = firstHalf.filter((event) => owner(event.key, 2) === index);
    results.push(...((await harness.process(mine, stamps(mine))).records as Total[]));
    results.push(...((await harness.watermark(1500)).records as Total[]));
  }
  const snapshots = two.map((harness) => harness.snapshot());
  const three = await Promise.all([0, 1, 2].map((index) => new OperatorHarness(create(), { range: range(index, 3), snapshots }).open(index, 3)));
  assert.ok(three.reduce((sum, harness) => sum + harness.backend.numTimers('event'), 0) > 0, 'pending window timers restored');
  const secondHalf = input.slice(200);
  for (const [index, harness] of three.entries()) {
    const mine = secondHalf.filter((event) => owner(event.key, 3) === index);
    results.push(...((await harness.process(mine, stamps(mine))).records as Total[]));
    // The watermark starts again after a restore (it is not checkpointed); restored timers fire as it passes them.
    results.push(...((await harness.watermark(Number.POSITIVE_INFINITY)).records as Total[]));
  }
  assert.deepEqual(sorted(results), sorted(expected));
});

test('window timestamps: windows of negative time are aligned too', () => {
  const windows = TumblingEventTimeWindows.of(1000).assignWindows(null, -1) as TimeWindow[];
  assert.deepEqual([windows[0]?.start, windows[0]?.end], [-1000, 0]);
});
