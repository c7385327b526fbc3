// test/unit/testing/broadcast-job.test.ts: the broadcast state example of docs/writing-a-job.md,
// run by the test driver. In a project the imports are 'weir-streams' and 'weir-streams/testing'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dataGenSource, defineJob, discardingSink, mapState } from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

interface Payment {
  account: string;
  country: string;
  amount: number;
}
interface Limit {
  country: string;
  max: number;
}

// The limit per country, as the broadcast side keeps it: the same in every subtask.
const limits = mapState<string, number>('limits');

const job = defineJob({
  name: 'payment-limits',
  build(env) {
    const limitUpdates = env.fromSource(dataGenSource<Limit>(), { uid: 'limits', parallelism: 1 }); // a compacted Kafka topic in the real job
    env
      .fromSource(dataGenSource<Payment>(), { uid: 'payments' })
      .keyBy((payment) => payment.account)
      .connect(limitUpdates.broadcast(limits))
      .process<string>(
        {
          processElement(payment, context, out) {
            const max = context.getBroadcastState(limits).get(payment.country);
            if (max !== undefined && payment.amount > max) out.collect(`${context.getCurrentKey()}: ${payment.amount} over ${max}`);
          },
          processBroadcastElement(limit, context) {
            context.getBroadcastState(limits).put(limit.country, limit.max);
          },
        },
        { uid: 'check-limits' },
      )
      .sinkTo(discardingSink(), { uid: 'alerts' });
  },
});

test('payments over their country limit raise an alert, with limits from the broadcast stream', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('limits', [{ country: 'NL', max: 100 }]);
  await driver.pipeInput('payments', [
    { account: 'a-1', country: 'NL', amount: 80 },
    { account: 'a-2', country: 'NL', amount: 120 },
    { account: 'a-3', country: 'FR', amount: 5000 },
  ]);
  assert.deepEqual(driver.readOutput('alerts'), ['a-2: 120 over 100']);
  const restored = await JobTestDriver.create(job, { restore: await driver.snapshot() });
  await restored.pipeInput('payments', [{ account: 'a-1', country: 'NL', amount: 101 }]);
  assert.deepEqual(restored.readOutput('alerts'), ['a-1: 101 over 100'], 'the limits come back from the snapshot');
});
