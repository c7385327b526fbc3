/**
 * The main job (`npm start` runs `weir demo`): the test lets it run with two crashes and then reads
 * the input and the output itself, read_committed, instead of trusting the demo's own audit.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { formatBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import { testBrokers } from '../harness/kafka.ts';

const run = promisify(execFile);

test('weir demo: payments -> balances and minute totals with two SIGKILLs; the output re-read here is exact', async () => {
  const brokers = testBrokers();
  const folder = await mkdtemp(join(tmpdir(), 'weir-demo-'));
  try {
    const { stdout } = await run(
      process.execPath,
      [
        join(import.meta.dirname, '..', '..', 'bin', 'weir.js'),
        'demo',
        '--records',
        '40000',
        '--accounts',
        '50',
        '--crashes',
        '2',
        '--data-dir',
        folder,
        '--ui-port',
        '0',
      ],
      {
        env: { ...process.env, KAFKA_BROKERS: formatBootstrap(brokers) },
        timeout: 300_000,
      },
    );
    assert.match(stdout, /^exactly once: OK$/m);
    assert.match(stdout, /^ {2}job kills: +2 /m);
    // Each kill cuts work in progress: the job was reading, with input left.
    const kills = [...stdout.matchAll(/^killed the job with SIGKILL \(kill \d\) while it worked through its input, ([\d,]+) records behind$/gm)];
    assert.equal(kills.length, 2, stdout);
    for (const [, behind] of kills) assert.ok(Number(behind?.replace(/,/g, '')) > 0, stdout);
    // The progress line says what the job reads this run (its counts arrive once a second, so a run
    // killed within its first second may show 0: the kill lines above say the work was in progress).
    assert.match(stdout, /^ {2}progress: [\d,]+ of 40,000 payments written; job read [\d,]+ this run \([\d,]+\/s\), lag [\d,]+, checkpoint /m);
    const [, input, output, totalsTopic] =
      /^topics: (\S+) \(payments\) -> (\S+) \(balances\), (\S+) \(totals per account and minute of event time\)$/m.exec(stdout) ?? [];
    assert.ok(input && output && totalsTopic, stdout);

    // The oracle: the committed payments as a read_committed reader sees them.
    const payments = (await readTopic({ bootstrap: brokers, topic: input })).map(
      (record) => JSON.parse(String(record.value)) as { seq: number; account: string; amount: number; ts: number },
    );
    assert.equal(payments.length, 40_000);
    const updates = (await readTopic({ bootstrap: brokers, topic: output })).map(
      (record) => JSON.parse(String(record.value)) as { seq: number; account: string; amount: number; balance: number },
    );
    assert.equal(updates.length, payments.length, 'one balance update per committed payment');
    assert.deepEqual(
      new Set(updates.map((update) => update.seq)),
      new Set(payments.map((payment) => payment.seq)),
      'exactly the committed payments, once each',
    );
    const totals = new Map<string, number>();
    for (const payment of payments) totals.set(payment.account, (totals.get(payment.account) ?? 0) + payment.amount);
    for (const [account, total] of totals) {
      const balances = updates.filter((update) => update.account === account).map((update) => update.balance);
      assert.equal(Math.max(...balances), total, `the final balance of ${account}`);
      assert.equal(new Set(balances).size, balances.length, `no balance of ${account} counted twice`);
    }

    // Per-account totals per minute of event time: one result per (account, minute) of the
    // committed payments, each exact (the job was stopped with --drain, so the last minute fired too).
    const expected = new Map<string, number>();
    for (const payment of payments) {
      const key = `${payment.account}@${Math.floor(payment.ts / 60_000) * 60_000}`;
      expected.set(key, (expected.get(key) ?? 0) + payment.amount);
    }
    const windows = (await readTopic({ bootstrap: brokers, topic: totalsTopic })).map(
      (record) => JSON.parse(String(record.value)) as { account: string; minute: number; total: number },
    );
    assert.equal(windows.length, expected.size, 'one total per account and minute');
    assert.deepEqual(new Map(windows.map((window) => [`${window.account}@${window.minute}`, window.total])), expected);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
