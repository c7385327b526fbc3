import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TaskOutput } from '../../../src/cluster/task-output.ts';
import type { OpenTransaction, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';

/** A driver that records what each transaction (by epoch-free id: the records field) received. */
function fakeDriver(options: { delayMs?: number; failAfter?: number } = {}) {
  const sent: { transaction: OpenTransaction; values: string[] }[] = [];
  let calls = 0;
  const driver = {
    async send(transaction: OpenTransaction, records: { value?: Buffer }[]) {
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (options.failAfter !== undefined && ++calls > options.failAfter) throw new Error('broker says no');
      sent.push({ transaction, values: records.map((record) => String(record.value)) });
    },
  } as unknown as TransactionDriver;
  return { driver, sent };
}

const open = (n: number): OpenTransaction => ({
  transactionalId: 't',
  producerId: 1n,
  producerEpoch: 0,
  partitions: new Set(),
  sequences: new Map() as never,
  records: n,
});
const record = (value: string) => ({ topic: 'out', partition: 0, value: Buffer.from(value) });

test('a seal ends the transaction: what comes after waits for the commit and goes into the next one; watermark hooks run first', async () => {
  const { driver, sent } = fakeDriver();
  const output = new TaskOutput(driver, open(1), 'b:9092', { onAvailable: () => {}, onFailure: (error) => assert.fail(String(error)) });
  output.onSeal(() => output.write([record('watermark')]));
  output.write([record('a'), record('b')]);
  output.seal(1);
  output.seal(1); // a second barrier of the same checkpoint changes nothing
  output.write([record('c')]);
  const sealed = await output.sealedSent(1);
  assert.equal(sealed.records, 1);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(
    sent.flatMap((entry) => entry.values),
    ['a', 'b', 'watermark'],
    'nothing of the next transaction is sent before the commit',
  );
  output.committed(open(2));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(sent.at(-1)?.values, ['c']);
  assert.equal(sent.at(-1)?.transaction.records, 2, 'into the next transaction');
});

test('more than the high-water mark waiting makes the output unavailable until sends catch up', async () => {
  const { driver } = fakeDriver({ delayMs: 20 });
  let woken = 0;
  const output = new TaskOutput(driver, open(1), 'b:9092', { onAvailable: () => woken++, onFailure: () => {} });
  output.write(Array.from({ length: 25_000 }, (_, i) => record(String(i))));
  assert.equal(output.available, false);
  output.seal(1);
  await output.sealedSent(1);
  assert.equal(output.available, true);
  assert.equal(woken, 1);
});

test('a failed send fails the task and every waiting checkpoint', async () => {
  const { driver } = fakeDriver({ failAfter: 0 });
  const failures: unknown[] = [];
  const output = new TaskOutput(driver, open(1), 'b:9092', { onAvailable: () => {}, onFailure: (error) => failures.push(error) });
  output.write([record('a')]);
  output.seal(1);
  await assert.rejects(output.sealedSent(1), /broker says no/);
  assert.equal(failures.length, 1);
  assert.equal(output.available, false);
});

test('quiet: nothing written since the last seal and no seal hook with news (an idle task skips its checkpoint)', () => {
  const { driver } = fakeDriver();
  const output = new TaskOutput(driver, open(1), 'b:9092', { onAvailable: () => {}, onFailure: (error) => assert.fail(String(error)) });
  let watermark = 0;
  let sealed = -1;
  output.onSeal(
    () => {
      output.write([record(`watermark ${watermark}`)]);
      sealed = watermark;
    },
    () => watermark !== sealed,
  );
  assert.equal(output.quiet, false, 'the first watermark frame is news');
  output.seal(1);
  assert.equal(output.quiet, true, 'after the seal: nothing new');
  watermark = 5;
  assert.equal(output.quiet, false, 'a moved watermark is news');
  output.seal(2);
  assert.equal(output.quiet, true);
  output.write([record('a')]);
  assert.equal(output.quiet, false, 'a record is news');
});
