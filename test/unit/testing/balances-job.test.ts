// test/unit/testing/balances-job.test.ts: the test driver example of docs/writing-a-job.md, itself a
// test (`node --test`). In a project the imports are 'weir-streams' and 'weir-streams/testing'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import balancesJob from '../../../examples/balances-job.ts';
import { valueState } from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

test('balances add up per account, and survive a restore', async () => {
  const driver = await JobTestDriver.create(balancesJob);
  await driver.pipeInput('payments', [
    { seq: 1, account: 'alice', amount: 10 },
    { seq: 2, account: 'bob', amount: 5 },
    { seq: 3, account: 'alice', amount: -3 },
  ]);
  assert.deepEqual(
    driver.readOutput<{ account: string; balance: number }>('balances-out').map((update) => [update.account, update.balance]),
    [
      ['alice', 10],
      ['bob', 5],
      ['alice', 7],
    ],
  );
  assert.equal(driver.keyedState('balances', valueState<number>('balance'), 'alice').value(), 7);

  const snapshot = await driver.snapshot();
  await driver.close();
  const restored = await JobTestDriver.create(balancesJob, { restore: snapshot });
  await restored.pipeInput('payments', [{ seq: 4, account: 'alice', amount: 1 }]);
  assert.deepEqual(restored.readOutput('balances-out'), [{ seq: 4, account: 'alice', amount: 1, balance: 8 }]);
  await restored.close();
});
