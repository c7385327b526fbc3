import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessingTimeService } from '../../../../src/runtime/tasks/processing-time-service.ts';
import { sleep, until } from './task-test-kit.ts';

function serviceWithLog() {
  const fired: { operator: number; at: number }[] = [];
  const service = new ProcessingTimeService((operator) => fired.push({ operator, at: Date.now() }));
  return { service, fired };
}

test('a callback fires for its operator once its time has come', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  const requestedAt = Date.now();
  service.requestCallback(2, requestedAt + 10);
  await until(() => fired.length === 1, 'the callback');
  assert.equal(fired[0]?.operator, 2);
  assert.ok((fired[0]?.at ?? 0) >= requestedAt + 9, 'not before its time');
});

test('of two requests the earliest wins: the later one is dropped', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  const now = Date.now();
  service.requestCallback(0, now + 40);
  service.requestCallback(0, now + 5);
  await until(() => fired.length === 1, 'the earlier callback');
  const firstAt = fired[0]?.at ?? 0;
  assert.ok(firstAt < now + 35, 'the earlier request replaced the later one');
  await sleep(60);
  assert.equal(fired.length, 1, 'the replaced request never fires');
});

test('a request later than the one held changes nothing', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  const now = Date.now();
  service.requestCallback(0, now + 5);
  service.requestCallback(0, now + 20);
  await sleep(50);
  assert.equal(fired.length, 1);
});

test('until fired() is called, the operator holds its callback; after it, a new request is taken', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  service.requestCallback(0, Date.now());
  await until(() => fired.length === 1, 'the first callback');
  service.requestCallback(0, Date.now() + 1);
  await sleep(20);
  assert.equal(fired.length, 1, 'a request at or after the one that fired is ignored until the task says it ran');
  service.fired(0);
  service.requestCallback(0, Date.now() + 1);
  await until(() => fired.length === 2, 'the second callback');
});

test('each operator has its own callback', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  const now = Date.now();
  service.requestCallback(0, now + 15);
  service.requestCallback(1, now + 1);
  await until(() => fired.length === 2, 'both callbacks');
  assert.deepEqual(
    fired.map((entry) => entry.operator),
    [1, 0],
  );
});

test('a time in the past fires at once', async (t) => {
  const { service, fired } = serviceWithLog();
  t.after(() => service.close());
  service.requestCallback(0, Date.now() - 1000);
  await until(() => fired.length === 1, 'the callback', 200);
});

test('close() cancels every callback', async () => {
  const { service, fired } = serviceWithLog();
  const now = Date.now();
  service.requestCallback(0, now + 5);
  service.requestCallback(1, now + 5);
  service.close();
  await sleep(25);
  assert.deepEqual(fired, []);
});
