import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AggregateFunction,
  AsyncDataStream,
  dataGenSource,
  defineJob,
  discardingSink,
  OutputTag,
  TumblingEventTimeWindows,
  type ValueState,
  valueState,
  WatermarkStrategy,
  WeirError,
} from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

interface Payment {
  account: string;
  amount: number;
  ts: number;
}

const sum: AggregateFunction<Payment, number, number> = {
  createAccumulator: () => 0,
  add: (payment, total) => total + payment.amount,
  getResult: (total) => total,
  merge: (a, b) => a + b,
};

const late = new OutputTag<Payment>('late');

/** Per-account totals per second of event time, late payments to their own sink, big payments flagged after 1 s of processing time. */
const job = defineJob({
  name: 'driver-test',
  build(env) {
    const payments = env.fromSource(dataGenSource<Payment>(), {
      uid: 'payments',
      watermarkStrategy: WatermarkStrategy.forMonotonousTimestamps<Payment>().withTimestampAssigner((payment) => payment.ts),
    });
    const totals = payments
      .keyBy((payment) => payment.account)
      .window(TumblingEventTimeWindows.of(1000))
      .sideOutputLateData(late)
      .aggregate(sum, { uid: 'totals' });
    totals.sinkTo(discardingSink(), { uid: 'totals-out' });
    totals.getSideOutput(late).sinkTo(discardingSink(), { uid: 'late-out' });
    let pending: ValueState<number>;
    payments
      .keyBy((payment) => payment.account)
      .process<string>(
        {
          open(context) {
            pending = context.getState(valueState<number>('pending'));
          },
          processElement(payment, context) {
            if (payment.amount < 100) return;
            pending.update(payment.amount);
            context.timerService.registerProcessingTimeTimer(context.timerService.currentProcessingTime() + 1000);
          },
          onTimer(timestamp, context, out) {
            out.collect(`${context.getCurrentKey()} paid ${pending.value()} (flagged at ${timestamp})`);
          },
        },
        { uid: 'flags' },
      )
      .sinkTo(discardingSink(), { uid: 'flags-out' });
    AsyncDataStream.orderedWait(payments, async (payment) => [`${payment.account}:${payment.amount}`], { timeout: '1s', uid: 'lookup' }).sinkTo(
      discardingSink(),
      {
        uid: 'lookup-out',
      },
    );
  },
});

test('event time moves only with the test: windows fire when the watermark passes them, late records go to their side output', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('payments', [
    { account: 'a', amount: 1, ts: 100 },
    { account: 'b', amount: 2, ts: 200 },
    { account: 'a', amount: 3, ts: 900 },
    { account: 'a', amount: 4, ts: 1500 },
  ]);
  assert.deepEqual(driver.readOutput('totals-out'), [], 'no watermark yet');
  await driver.advanceWatermark(999);
  assert.deepEqual(driver.readOutputWithTimestamps('totals-out'), [
    { record: 4, timestamp: 999 },
    { record: 2, timestamp: 999 },
  ]);
  await driver.pipeInput('payments', [{ account: 'b', amount: 9, ts: 10 }]);
  assert.deepEqual(driver.readOutput('late-out'), [{ account: 'b', amount: 9, ts: 10 }]);
  await driver.endInput();
  assert.deepEqual(driver.readOutput('totals-out'), [4], 'the end of input fires the last window');
});

test('processing time moves only with the test: timers fire in time order when it passes them', async () => {
  const driver = await JobTestDriver.create(job, { startTime: 10_000 });
  await driver.pipeInput('payments', [{ account: 'a', amount: 500, ts: 1 }]);
  await driver.advanceProcessingTime(400);
  await driver.pipeInput('payments', [{ account: 'b', amount: 700, ts: 2 }]);
  await driver.advanceProcessingTime(599);
  assert.deepEqual(driver.readOutput('flags-out'), [], 'not yet');
  await driver.advanceProcessingTime(1);
  assert.deepEqual(driver.readOutput('flags-out'), ['a paid 500 (flagged at 11000)']);
  await driver.advanceProcessingTime(10_000);
  assert.deepEqual(driver.readOutput('flags-out'), ['b paid 700 (flagged at 11400)']);
  assert.equal(driver.currentProcessingTime, 21_000);
});

test('async I/O runs to its results before pipeInput resolves; state and timers come back from a snapshot', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('payments', [
    { account: 'a', amount: 500, ts: 1 },
    { account: 'b', amount: 3, ts: 2 },
  ]);
  assert.deepEqual(driver.readOutput('lookup-out'), ['a:500', 'b:3']);
  const snapshot = await driver.snapshot();
  await driver.close();
  const restored = await JobTestDriver.create(job, { restore: snapshot });
  assert.equal(restored.keyedState('flags', valueState<number>('pending'), 'a').value(), 500);
  await restored.advanceProcessingTime(1000);
  assert.deepEqual(restored.readOutput('flags-out'), ['a paid 500 (flagged at 1000)'], 'the restored timer fires');
  await restored.advanceWatermark(2000);
  assert.deepEqual(
    restored.readOutput<number>('totals-out').sort((a, b) => a - b),
    [3, 500],
    'the restored window contents',
  );
});

test('a source, sink or operator the job does not have is named in the error, with the ones it has', async () => {
  const driver = await JobTestDriver.create(job);
  await assert.rejects(driver.pipeInput('orders', [{}]), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.match(error.message, /job "driver-test" has no source with the uid or name "orders"/);
    assert.match(error.hint ?? '', /its sources: payments/);
    return true;
  });
  assert.throws(() => driver.readOutput('nowhere'), /has no sink with the uid or name "nowhere"/);
  assert.throws(() => driver.keyedState('lookup', valueState('x'), 'a'), /has no operator|is not keyed/);
});
