// Async I/O in the test driver runs on the driver's processing time (issue 33, point 5): a call's
// timeout and its retry delays fire when the test moves time (advanceProcessingTime), never on the
// wall clock, and pipeInput does not wait for a timeout that has not passed on the driver's clock.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AsyncDataStream, type AsyncFunction, type AsyncWaitOptions, dataGenSource, defineJob, discardingSink, type Job } from '../../../src/index.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

/** source `in` -> orderedWait `lookup` (fn, options) -> sink `out`. */
function lookupJob(fn: AsyncFunction<number, number>, options: AsyncWaitOptions<number>): Job {
  return defineJob({
    name: 'async-driver-time',
    build(env) {
      const numbers = env.fromSource(dataGenSource<number>(), { uid: 'in' });
      AsyncDataStream.orderedWait(numbers, fn, { uid: 'lookup', ...options }).sinkTo(discardingSink(), { uid: 'out' });
    },
  });
}

/** Never answers: only its timeout ends a call. */
const silent = (_record: number) => new Promise<number[]>(() => {});

test('a call that never answers: pipeInput returns at once, and its timeout fires when the test moves processing time past it', async () => {
  const driver = await JobTestDriver.create(lookupJob({ asyncInvoke: silent, timeout: (record) => [-record] }, { timeout: '1s' }));
  await driver.pipeInput('in', [7]);
  assert.deepEqual(driver.readOutput('out'), [], 'no time passed on the driver: the call is still in flight');
  assert.equal(driver.metric('lookup', 'asyncInFlight'), 1);
  await driver.advanceProcessingTime(999);
  assert.deepEqual(driver.readOutput('out'), [], '1 ms before the timeout');
  await driver.advanceProcessingTime(1);
  assert.deepEqual(driver.readOutput('out'), [-7], 'the timeout function gave the result at 1000');
  assert.equal(driver.metric('lookup', 'asyncTimeouts'), 1);
  assert.equal(driver.metric('lookup', 'asyncInFlight'), 0);
  await driver.close();
});

test('without a timeout function, the timeout fails the driver call that moved time past it', async () => {
  const driver = await JobTestDriver.create(lookupJob(silent, { timeout: '1s' }));
  await driver.pipeInput('in', [7]);
  await driver.advanceProcessingTime(500);
  await assert.rejects(driver.advanceProcessingTime(500), /did not resolve within its timeout of 1000 ms/);
  await driver.close();
});

test('retry delays wait on the driver clock: each attempt comes when the test moves time past its delay', async () => {
  const calls: { record: number; attempt: number; at: number }[] = [];
  let driver: JobTestDriver | undefined;
  const flaky = async (record: number, { attempt }: { attempt: number }) => {
    calls.push({ record, attempt, at: driver?.currentProcessingTime ?? 0 });
    if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
    return [record * 10];
  };
  driver = await JobTestDriver.create(lookupJob(flaky, { timeout: '10s', retry: { maxAttempts: 3, delay: 500 } }));
  await driver.pipeInput('in', [1]);
  assert.deepEqual(
    calls.map((call) => call.attempt),
    [1],
    'the second attempt waits for 500 ms of driver time',
  );
  assert.deepEqual(driver.readOutput('out'), []);
  await driver.advanceProcessingTime(499);
  assert.equal(calls.length, 1);
  await driver.advanceProcessingTime(501);
  assert.deepEqual(
    calls.map((call) => [call.attempt, call.at]),
    [
      [1, 0],
      [2, 500],
      [3, 1000],
    ],
    'each retry at its time on the driver clock, in order',
  );
  assert.deepEqual(driver.readOutput('out'), [10]);
  assert.equal(driver.metric('lookup', 'asyncRetries'), 2);
  await driver.close();
});

test('a full capacity holds the input back on driver time: pipeInput returns, and the rest goes in as timeouts free room', async () => {
  const called: number[] = [];
  const fn = {
    asyncInvoke: (record: number) => {
      called.push(record);
      return record === 2 ? Promise.resolve([20]) : new Promise<number[]>(() => {});
    },
    timeout: (record: number) => [-record],
  };
  const driver = await JobTestDriver.create(lookupJob(fn, { timeout: '1s', capacity: 2 }));
  await driver.pipeInput('in', [1, 2, 3, 4]);
  assert.deepEqual(called, [1, 2], 'record 2 answered, but ordered: it waits behind 1, and the queue is full');
  assert.deepEqual(driver.readOutput('out'), []);
  await assert.rejects(
    driver.snapshot(),
    /snapshot\(\): the job is still busy with input it was given: async I\/O "lookup" \(2 in flight\) waits on driver time/,
  );
  await driver.advanceProcessingTime(1000);
  assert.deepEqual(called, [1, 2, 3, 4], 'record 1 timed out at 1000: records 3 and 4 went in');
  assert.deepEqual(driver.readOutput('out'), [-1, 20]);
  await driver.advanceProcessingTime(1000);
  assert.deepEqual(driver.readOutput('out'), [-3, -4], 'their timeouts came 1 s after they went in');
  await driver.pipeInput('in', [2]);
  assert.deepEqual(driver.readOutput('out'), [20], 'the driver takes input again');
  await driver.close();
});

test('the end of input waits for calls in flight on the driver clock too: endInput returns, their timeouts end them', async () => {
  const driver = await JobTestDriver.create(lookupJob({ asyncInvoke: silent, timeout: (record) => [-record] }, { timeout: '2s' }));
  await driver.pipeInput('in', [1]);
  await driver.advanceProcessingTime(1000);
  await driver.endInput();
  assert.deepEqual(driver.readOutput('out'), []);
  await driver.advanceProcessingTime(1000);
  assert.deepEqual(driver.readOutput('out'), [-1]);
  await driver.close();
});

test('calls that answer are waited for before pipeInput resolves, real latency included', async () => {
  const slow = async (record: number) => {
    await sleep(record);
    return [record];
  };
  const driver = await JobTestDriver.create(lookupJob(slow, { timeout: '1s' }));
  await driver.pipeInput('in', [30, 1, 10]);
  assert.deepEqual(driver.readOutput('out'), [30, 1, 10]);
  assert.equal(driver.currentProcessingTime, 0, 'the driver clock did not move');
  await driver.close();
});

test('calls to a real service are waited for, the connection kept alive between inputs too', async (t) => {
  const server = createServer((request, response) => {
    setTimeout(() => response.end(JSON.stringify([Number(request.url?.slice(1)) * 2])), 20);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ask = async (record: number, { signal }: { signal: AbortSignal }) => (await (await fetch(`${url}/${record}`, { signal })).json()) as number[];
  const driver = await JobTestDriver.create(lookupJob(ask, { timeout: '5s' }));
  await driver.pipeInput('in', [1, 2]);
  assert.deepEqual(driver.readOutput('out'), [2, 4]);
  await driver.pipeInput('in', [3]);
  assert.deepEqual(driver.readOutput('out'), [6]);
  await driver.close();
});

test('a timeout and the timers it leads to downstream fire in time order within one move of processing time', async () => {
  const job = defineJob({
    name: 'async-then-timer',
    build(env) {
      const numbers = env.fromSource(dataGenSource<number>(), { uid: 'in' });
      AsyncDataStream.orderedWait(numbers, { asyncInvoke: silent, timeout: (record) => [-record] }, { uid: 'lookup', timeout: '1s' })
        .keyBy((record) => record)
        .process<string>(
          {
            processElement(record, context, out) {
              const now = context.timerService.currentProcessingTime();
              out.collect(`${record} at ${now}`);
              context.timerService.registerProcessingTimeTimer(now + 100);
            },
            onTimer(timestamp, context, out) {
              out.collect(`timer of ${context.getCurrentKey()} at ${timestamp}`);
            },
          },
          { uid: 'after' },
        )
        .sinkTo(discardingSink(), { uid: 'out' });
    },
  });
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('in', [1]);
  await driver.advanceProcessingTime(500);
  await driver.pipeInput('in', [2]);
  await driver.advanceProcessingTime(5000);
  assert.deepEqual(driver.readOutput('out'), ['-1 at 1000', 'timer of -1 at 1100', '-2 at 1500', 'timer of -2 at 1600']);
  assert.equal(driver.currentProcessingTime, 5500);
  await driver.close();
});

test('input held back behind retry delays returns at once, whatever else keeps the event loop busy', async (t) => {
  const busy = setInterval(() => {}, 60_000); // after the driver opened: more than its baseline
  t.after(() => clearInterval(busy));
  const calls: string[] = [];
  const flaky = async (record: number, { attempt }: { attempt: number }) => {
    calls.push(`${record}#${attempt}`);
    if (attempt === 1 && record === 1) throw new Error('try again');
    return [record * 10];
  };
  const driver = await JobTestDriver.create(lookupJob(flaky, { timeout: '10m', capacity: 1, retry: { maxAttempts: 2, delay: '1s' } }));
  await driver.pipeInput('in', [1, 2]);
  assert.deepEqual(calls, ['1#1'], 'record 1 waits 1 s of driver time for its retry; record 2 for room');
  await driver.advanceProcessingTime(1000);
  assert.deepEqual(calls, ['1#1', '1#2', '2#1']);
  assert.deepEqual(driver.readOutput('out'), [10, 20]);
  await driver.close();
});
