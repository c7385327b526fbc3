// test/unit/testing/state-ttl-job.test.ts: the state TTL example of docs/writing-a-job.md, run by
// the test driver. In a project the imports are 'weir-streams' and 'weir-streams/testing'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dataGenSource, defineJob, discardingSink, enableTimeToLive, type ValueState, valueState } from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

interface Click {
  user: string;
  page: string;
}

// Clicks per user in a visit: a visit ends after 30 minutes without a click (the count's TTL).
const clicksInVisit = enableTimeToLive(valueState<number>('clicks-in-visit'), {
  ttl: '30m',
  updateType: 'OnReadAndWrite',
  cleanup: { fullSnapshot: true },
});

const job = defineJob({
  name: 'visits',
  build(env) {
    let clicks: ValueState<number>;
    env
      .fromSource(dataGenSource<Click>(), { uid: 'clicks' }) // a Kafka source in the real job
      .keyBy((click) => click.user)
      .process<{ user: string; click: number }>(
        {
          open(context) {
            clicks = context.getState(clicksInVisit);
          },
          processElement(click, _context, out) {
            const next = (clicks.value() ?? 0) + 1;
            clicks.update(next);
            out.collect({ user: click.user, click: next });
          },
        },
        { uid: 'visits' },
      )
      .sinkTo(discardingSink(), { uid: 'visits-out' });
  },
});

test('a visit ends 30 minutes after its last click, and its count does not come back from a checkpoint', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('clicks', [
    { user: 'ann', page: '/' },
    { user: 'ann', page: '/shoes' },
  ]);
  await driver.advanceProcessingTime(29 * 60_000);
  await driver.pipeInput('clicks', [{ user: 'ann', page: '/cart' }]);
  assert.deepEqual(
    driver.readOutput<{ click: number }>('visits-out').map((visit) => visit.click),
    [1, 2, 3],
  );
  await driver.advanceProcessingTime(30 * 60_000);
  const snapshot = await driver.snapshot();
  const restored = await JobTestDriver.create(job, { restore: snapshot, startTime: driver.currentProcessingTime });
  await restored.pipeInput('clicks', [{ user: 'ann', page: '/' }]);
  assert.deepEqual(restored.readOutput('visits-out'), [{ user: 'ann', click: 1 }], 'a new visit');
});
