// test/unit/testing/orders-job.test.ts: the keys, type guard and metrics example of
// docs/writing-a-job.md, run by the test driver. In a project the imports are 'weir-streams' and
// 'weir-streams/testing'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dataGenSource, defineJob, discardingSink, type MetricCounter, type MetricHistogram, type ValueState, valueState } from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

type Order = { kind: 'paid'; region: string; account: string; amount: number } | { kind: 'cancelled'; region: string; account: string };
type Paid = Extract<Order, { kind: 'paid' }>;

const job = defineJob({
  name: 'orders-per-account',
  build(env) {
    let total: ValueState<number>;
    let paid: MetricCounter;
    let amounts: MetricHistogram;
    env
      .fromSource(dataGenSource<Order>(), { uid: 'orders' })
      // A type guard narrows the stream: from here on it is a stream of Paid.
      .filter((order): order is Paid => order.kind === 'paid')
      // A composite key: a tuple of primitives (a record of them works too, whatever its field order).
      .keyBy((order): [string, string] => [order.region, order.account])
      .process<{ region: string; account: string; total: number }>(
        {
          open(context) {
            total = context.getState(valueState<number>('total'));
            paid = context.metrics.counter('paid');
            amounts = context.metrics.histogram('amount');
          },
          processElement(order, context, out) {
            paid.inc();
            amounts.update(order.amount);
            const [region, account] = context.getCurrentKey();
            const next = (total.value() ?? 0) + order.amount;
            total.update(next);
            out.collect({ region, account, total: next });
          },
        },
        { uid: 'totals' },
      )
      .sinkTo(discardingSink(), { uid: 'totals-out' });
  },
});

test('paid orders add up per region and account; the function counts them in its own metrics', async () => {
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput<Order>('orders', [
    { kind: 'paid', region: 'eu', account: 'a', amount: 10 },
    { kind: 'cancelled', region: 'eu', account: 'a' },
    { kind: 'paid', region: 'us', account: 'a', amount: 7 },
    { kind: 'paid', region: 'eu', account: 'a', amount: 5 },
  ]);
  assert.deepEqual(driver.readOutput('totals-out'), [
    { region: 'eu', account: 'a', total: 10 },
    { region: 'us', account: 'a', total: 7 },
    { region: 'eu', account: 'a', total: 15 },
  ]);
  assert.equal(driver.keyedState('totals', valueState<number>('total'), ['eu', 'a']).value(), 15);
  assert.equal(driver.metric('totals', 'user.paid'), 3);
  assert.equal(driver.metric('totals', 'user.amount/0/max'), 10);
});
