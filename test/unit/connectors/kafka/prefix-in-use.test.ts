import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activity, prefixProbeWindow } from '../../../../src/connectors/kafka/prefix-in-use.ts';
import type { TransactionDescription } from '../../../../src/connectors/kafka/transaction-driver.ts';

const now = 1_000_000;
const open = (id: string, overrides: Partial<TransactionDescription> = {}): TransactionDescription => ({
  transactionalId: id,
  state: 'Ongoing',
  producerId: 7n,
  producerEpoch: 3,
  startTimeMs: now - 5_000,
  timeoutMs: 60_000,
  partitions: 2,
  ...overrides,
});

test("a dead run's open transactions stand still: no activity", () => {
  assert.equal(activity([open('p-0-0'), open('p-1-0')], [open('p-0-0'), open('p-1-0')], now), undefined);
});

test('the broker aborting a timed-out transaction (with an epoch bump) is no activity', () => {
  const old = open('p-0-0', { startTimeMs: now - 61_000 });
  assert.equal(activity([old], [{ ...old, state: 'CompleteAbort', producerEpoch: 4, startTimeMs: -1 }], now), undefined);
});

test('a live producer shows: a new transaction, a commit, new partitions, a new epoch, an abort before the timeout', () => {
  assert.match(activity([open('p-0-0')], [open('p-0-0'), open('p-0-1')], now) ?? '', /"p-0-1" began/);
  assert.match(activity([open('p-0-0')], [open('p-0-0', { state: 'CompleteCommit' })], now) ?? '', /ended by its producer/);
  assert.match(activity([open('p-0-0')], [open('p-0-0', { partitions: 3 })], now) ?? '', /new partitions/);
  assert.match(activity([open('p-0-0')], [open('p-0-0', { producerEpoch: 4 })], now) ?? '', /initialized again/);
  assert.match(activity([open('p-0-0')], [open('p-0-0', { state: 'CompleteAbort', producerEpoch: 4 })], now) ?? '', /initialized again/);
});

test('the probe window is twice the checkpoint interval, between 2 and 10 seconds', () => {
  assert.equal(prefixProbeWindow(undefined), 2_000);
  assert.equal(prefixProbeWindow(300), 2_000);
  assert.equal(prefixProbeWindow(3_000), 6_000);
  assert.equal(prefixProbeWindow(60_000), 10_000);
});
