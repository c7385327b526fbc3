/** The error policies where the function that throws is not called for one record: timers, window firings, join pairs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeyedStream, SingleOutputStreamOperator } from '../../../../src/api/data-stream.ts';
import { StreamExecutionEnvironment } from '../../../../src/api/stream-execution-environment.ts';
import { TumblingEventTimeWindows } from '../../../../src/api/windowing/tumbling-windows.ts';
import { dataGenSource } from '../../../../src/connectors/datagen/datagen-source.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { WatermarkStrategy } from '../../../../src/core/event-time/watermark-strategy.ts';
import { DEAD_LETTER_TAG, type DeadLetterRecord, type RecordErrorPolicy } from '../../../../src/core/functions/dead-letter.ts';
import type { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import type { OperatorNode } from '../../../../src/graph/stream-graph.ts';
import { KeyedProcessOperator } from '../../../../src/runtime/operators/keyed-process-operator.ts';
import { OperatorHarness } from './operator-harness.ts';

interface Event {
  key: string;
  ts: number;
  amount: number;
}
const ev = (key: string, ts: number, amount = 1): Event => ({ key, ts, amount });
const stamps = (events: Event[]) => events.map((event) => event.ts);
const letterValues = (h: OperatorHarness<unknown, unknown>) =>
  (h.sideOutputs.get(DEAD_LETTER_TAG) ?? []).map((entry) => {
    const letter = entry.record as DeadLetterRecord;
    return [JSON.parse(Buffer.from(letter.value as Uint8Array).toString()), entry.timestamp, letter.errorMessage, letter.topic];
  });

/** The last operator the API builds on a keyed stream of events (event time from `ts`). */
function operatorOf<R>(build: (keyed: KeyedStream<Event, string>, env: StreamExecutionEnvironment) => SingleOutputStreamOperator<R>): StreamOperator<Event, R> {
  const env = new StreamExecutionEnvironment();
  const strategy = WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((event) => event.ts);
  const events = env.fromSource(dataGenSource<Event>({ count: 1, generate: () => ev('a', 0) }), { watermarkStrategy: strategy });
  build(
    events.keyBy((event) => event.key),
    env,
  );
  return (env.graph.nodes.at(-1) as OperatorNode).createOperator() as StreamOperator<Event, R>;
}

/** A keyed process function that sets an event-time timer at each record's time + 1 and emits, then throws, for timers of odd records. */
function timers(onError: RecordErrorPolicy) {
  return new KeyedProcessOperator<string, Event, string>(
    {
      processElement(event, context) {
        context.timerService.registerEventTimeTimer(event.ts + 1);
      },
      onTimer(timestamp, context, out) {
        out.collect(`${context.getCurrentKey()}@${timestamp}`);
        if ((timestamp - 1) % 2 === 1) throw new RangeError(`timer ${timestamp} failed`);
      },
    },
    (event) => event.key,
    onError,
  );
}

test("keyed process onTimer 'skip': what a failing timer emitted is dropped, counted, and the next timers fire", async () => {
  const h = await new OperatorHarness(timers('skip')).open();
  const input = [ev('a', 10), ev('a', 11), ev('b', 12), ev('b', 13)];
  await h.process(input, stamps(input));
  const fired = await h.watermark(100);
  assert.deepEqual(fired.records, ['a@11', 'b@13']);
  assert.deepEqual(fired.timestamps, [11, 13]);
  assert.equal(h.counters.get('recordsSkipped'), 2);
});

test('keyed process onTimer dead letters: the key, the timer and its domain, at the timer time', async () => {
  const h = await new OperatorHarness(timers({ deadLetterTopic: 'timers-dlq' })).open();
  const input = [ev('a', 10), ev('a', 11)];
  await h.process(input, stamps(input));
  assert.deepEqual((await h.watermark(100)).records, ['a@11']);
  assert.deepEqual(letterValues(h), [[{ key: 'a', timer: 12, domain: 'event' }, 12, 'timer 12 failed', 'timers-dlq']]);
  assert.equal(h.counters.get('deadLetters'), 1);
});

test("keyed process onTimer 'fail': RECORD_FAILED naming the timer, its key and the throw's place", async () => {
  const h = await new OperatorHarness(timers('fail')).open();
  await h.process([ev('a', 11)], [11]);
  await assert.rejects(h.watermark(100), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'RECORD_FAILED');
    assert.match(
      error.message,
      /^operator "test operator" \(1\/1\) failed on the event-time timer at 12 of key "a": timer 12 failed\n {4}at Object\.onTimer \(.*timer-window-join-error-policies\.test\.ts:\d+:\d+\)/,
    );
    return true;
  });
});

/** Sums per key and 1 s window; a reduce that throws on amount 13, a window function that throws on the key "bad". */
const sums = (onError: RecordErrorPolicy | 'none') =>
  operatorOf((keyed) =>
    keyed.window(TumblingEventTimeWindows.of(1000)).reduce(
      (a, b) => {
        if (b.amount === 13) throw new TypeError('unlucky amount');
        return { ...a, amount: a.amount + b.amount };
      },
      {
        process(key, context, [sum], out) {
          if (key === 'bad') throw new Error(`window of ${key} failed`);
          out.collect(`${key} [${context.window.start}, ${context.window.end}) ${sum?.amount}`);
        },
      },
      onError === 'none'
        ? {}
        : { onError: onError === 'fail' || onError === 'skip' ? onError : { deadLetter: { topic: onError.deadLetterTopic, deliveryGuarantee: 'none' } } },
    ),
  );

test("window 'skip': a record whose reduce throws is left out of its window; a firing whose window function throws emits nothing, and the window is cleaned up", async () => {
  const h = await new OperatorHarness(sums('skip')).open();
  const input = [ev('a', 100, 1), ev('a', 200, 13), ev('a', 300, 2), ev('bad', 400, 5), ev('a', 1100, 7)];
  await h.process(input, stamps(input));
  assert.deepEqual((await h.watermark(999)).records, ['a [0, 1000) 3']);
  assert.deepEqual((await h.watermark(Number.POSITIVE_INFINITY)).records, ['a [1000, 2000) 7']);
  assert.equal(h.counters.get('recordsSkipped'), 2, 'the record of amount 13 and the firing of "bad"');
});

test("window dead letters: the record whose reduce throws, and the key and window of a firing that throws, at the window's time", async () => {
  const h = await new OperatorHarness(sums({ deadLetterTopic: 'windows-dlq' })).open();
  const input = [ev('a', 100, 1), ev('a', 200, 13), ev('bad', 400, 5)];
  await h.process(input, stamps(input));
  assert.deepEqual((await h.watermark(999)).records, ['a [0, 1000) 1']);
  assert.deepEqual(letterValues(h), [
    [{ key: 'a', ts: 200, amount: 13 }, 200, 'unlucky amount', 'windows-dlq'],
    [{ key: 'bad', window: { start: 0, end: 1000 } }, 999, 'window of bad failed', 'windows-dlq'],
  ]);
});

test("window 'fail' (the default): RECORD_FAILED naming the window and its key", async () => {
  const h = await new OperatorHarness(sums('none')).open();
  await h.process([ev('bad', 400, 5)], [400]);
  await assert.rejects(h.watermark(999), /failed on firing the window TimeWindow\{start=0, end=1000\} of key "bad": window of bad failed/);
});

test("window join 'skip' and interval join dead letters: a failing join function drops its output, not the job", async () => {
  // The window join's operator sees both inputs tagged, as the API's coGroup makes them.
  const join = await new OperatorHarness(
    operatorOf((keyed, env) =>
      keyed
        .join(env.fromSource(dataGenSource<Event>({ count: 1, generate: () => ev('a', 0) })))
        .where((event) => event.key)
        .equalTo((event) => event.key)
        .window(TumblingEventTimeWindows.of(1000))
        .apply(
          (left, right) => {
            if (left.key === 'bad') throw new Error('join failed');
            return `${left.key} ${left.amount + right.amount}`;
          },
          { onError: 'skip' },
        ),
    ) as StreamOperator<unknown, string>,
  ).open();
  const tagged = [
    { side: 1, value: ev('a', 100, 1) },
    { side: 2, value: ev('a', 200, 2) },
    { side: 1, value: ev('bad', 300, 1) },
    { side: 2, value: ev('bad', 400, 2) },
  ];
  await join.process(tagged, [100, 200, 300, 400]);
  assert.deepEqual((await join.watermark(999)).records, ['a 3']);
  assert.equal(join.counters.get('recordsSkipped'), 1);

  const interval = await new OperatorHarness(
    operatorOf((keyed) =>
      keyed
        .intervalJoin(keyed)
        .between(0, 100)
        .process<string>(
          {
            processElement(left, right, _context, out) {
              if (right.amount === 13) throw new Error('pair failed');
              out.collect(`${left.amount}+${right.amount}`);
            },
          },
          { onError: { deadLetter: { topic: 'pairs-dlq', deliveryGuarantee: 'none' } } },
        ),
    ),
  ).open();
  await interval.process([ev('a', 100, 1)], [100]);
  assert.deepEqual((await interval.process2([ev('a', 150, 13), ev('a', 160, 2)], [150, 160])).records, ['1+2']);
  assert.deepEqual(letterValues(interval), [[{ left: ev('a', 100, 1), right: ev('a', 150, 13) }, 150, 'pair failed', 'pairs-dlq']]);
});
