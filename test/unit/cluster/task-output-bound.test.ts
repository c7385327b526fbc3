/**
 * A task's transaction whose checkpoint has not reached its commit (its snapshot or state upload
 * still under way) when the transaction has been open for three quarters of the transaction timeout
 * fails the task, saying why, before the broker aborts it (issue 32, point 7).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TaskOutput } from '../../../src/cluster/task-output.ts';
import { openTransactionBudgetMs, restoreReadTimeoutMs, taskTransactionTimeoutMs } from '../../../src/cluster/task-transaction-timeout.ts';
import type { OpenTransaction, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const driver = (transactionTimeoutMs: number) => ({ transactionTimeoutMs, async send() {} }) as unknown as TransactionDriver;
const open = (): OpenTransaction => ({
  transactionalId: 'weir-c-totals-0',
  producerId: 1n,
  producerEpoch: 0,
  partitions: new Set(),
  sequences: new Map() as never,
  records: 0,
});
const record = { topic: 'out', partition: 0, value: Buffer.from('x') };

function output(timeoutMs: number) {
  const failures: unknown[] = [];
  const out = new TaskOutput(driver(timeoutMs), open(), 'b:9092', { onAvailable: () => {}, onFailure: (error) => failures.push(error) });
  return { out, failures };
}

test('a transaction whose checkpoint does not reach its commit within the budget fails the task, naming the transaction timeout', async () => {
  const { out, failures } = output(400); // a budget of 300 ms
  out.write([record]);
  out.seal(1);
  await sleep(100);
  assert.equal(failures.length, 0, 'within the budget');
  await sleep(400);
  assert.equal(failures.length, 1);
  const error = failures[0] as WeirError;
  assert.ok(error instanceof WeirError);
  assert.equal(error.code, 'TASK_TRANSACTION_TIMED_OUT');
  assert.match(error.message, /its transaction has been open \d+ ms and checkpoint 1 has not reached its commit \(the snapshot or the upload of the state/);
  assert.match(
    error.message,
    /task transaction timeout 400 ms \(min\(the brokers' transaction\.max\.timeout\.ms, max\(60 s, 10 x checkpointing\.interval\)\)\)/,
  );
  await assert.rejects(out.sealedSent(1), (rejected) => rejected === error, 'the checkpoint cannot commit');
  assert.equal(out.available, false);
});

test('a checkpoint that reaches its commit in time, and a transaction with nothing sent, are left alone', async () => {
  const { out, failures } = output(400);
  out.write([record]);
  out.seal(1);
  await sleep(50);
  const sealed = await out.sealedSent(1); // the state is written: the commit follows
  await sleep(400);
  out.committed({ ...sealed, partitions: new Set(), records: 0 });
  out.seal(2); // nothing written into the next one: no transaction is open on the broker
  await sleep(400);
  assert.deepEqual(failures, []);
  // The next transaction's budget starts at its own first send.
  out.write([record]);
  await out.sealedSent(2);
  out.committed(open());
  out.write([record]);
  out.seal(3);
  await sleep(500);
  assert.equal((failures[0] as WeirError | undefined)?.code, 'TASK_TRANSACTION_TIMED_OUT');
});

test('the transaction timeout, the budget and the restore read agree', () => {
  assert.equal(taskTransactionTimeoutMs(900_000, 1000), 60_000);
  assert.equal(taskTransactionTimeoutMs(900_000, 30_000), 300_000);
  assert.equal(taskTransactionTimeoutMs(6000, 1000), 6000);
  assert.equal(openTransactionBudgetMs(60_000), 45_000);
  for (const timeout of [6000, 60_000, 300_000, 900_000]) {
    assert.ok(restoreReadTimeoutMs(timeout) > timeout, 'the restore read outwaits any legal open transaction');
    assert.ok(restoreReadTimeoutMs(timeout) >= 120_000);
  }
});

test('a bound due long ago (the process was paused past the timeout) leaves the abort to the broker, which the member tells apart', async () => {
  const { out, failures } = output(400);
  out.write([record]);
  out.seal(1);
  const until = Date.now() + 450; // the event loop held past the whole timeout
  while (Date.now() < until) {
    // held
  }
  await sleep(50);
  assert.deepEqual(failures, []);
});
