// test/unit/testing/event-time-job.test.ts: the event-time example of docs/event-time.md, run by the
// test driver. In a project the imports are 'weir-streams' and 'weir-streams/testing'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AggregateFunction,
  AsyncDataStream,
  dataGenSource,
  defineJob,
  discardingSink,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

interface Reading {
  sensor: string;
  celsius: number;
  ts: number;
}

const maxOf: AggregateFunction<Reading, number, number> = {
  createAccumulator: () => Number.NEGATIVE_INFINITY,
  add: (reading, max) => Math.max(max, reading.celsius),
  getResult: (max) => max,
  merge: (a, b) => Math.max(a, b),
};

const job = defineJob({
  name: 'sensor-maxima',
  build(env) {
    const readings = env.fromSource(dataGenSource<Reading>(), {
      uid: 'readings',
      watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<Reading>('5s').withTimestampAssigner((reading) => reading.ts),
    });
    // An async lookup (a calibration service) that answers out of order: unorderedWait lets results
    // out as they come, but never past a watermark, so the windows after it stay correct.
    const calibrated = AsyncDataStream.unorderedWait(
      readings,
      async (reading) => {
        await sleep(reading.sensor === 'slow' ? 20 : 1);
        return [{ ...reading, celsius: reading.celsius + 0.5 }];
      },
      { timeout: '1s', uid: 'calibrate' },
    );
    calibrated
      .keyBy((reading) => reading.sensor)
      .window(TumblingEventTimeWindows.of('1m'))
      .aggregate(maxOf, { uid: 'maxima' })
      .sinkTo(discardingSink(), { uid: 'maxima-out' });
  },
});

test('a minute window fires when the watermark passes its end, with every reading before the watermark in it', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('readings', [
    { sensor: 'slow', celsius: 20, ts: 10_000 },
    { sensor: 'fast', celsius: 18, ts: 20_000 },
    { sensor: 'slow', celsius: 25, ts: 59_000 },
  ]);
  assert.deepEqual(driver.readOutput('maxima-out'), [], 'no watermark yet');
  await driver.advanceWatermark(59_999);
  assert.deepEqual(
    driver.readOutputWithTimestamps<number>('maxima-out').sort((a, b) => a.record - b.record),
    [
      { record: 18.5, timestamp: 59_999 },
      { record: 25.5, timestamp: 59_999 },
    ],
  );
  await driver.pipeInput('readings', [{ sensor: 'fast', celsius: 30, ts: 61_000 }]);
  await driver.endInput();
  assert.deepEqual(driver.readOutput('maxima-out'), [30.5], 'the end of input fires the last window');
});
