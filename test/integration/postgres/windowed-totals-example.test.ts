/**
 * The showcase example examples/windowed-totals-postgres.ts (Kafka -> keyBy(account) -> tumbling
 * one-minute event-time windows -> postgresSink upsert by (account, window_start), exactly-once)
 * run as it is, against the real broker and a real PostgreSQL (test/harness/postgres-server.ts),
 * SIGKILLed once its windows are being written, then restarted from its checkpoint. The table read
 * back must hold exactly one row per account and window with the totals of the input, and nothing
 * may stay prepared once the job has ended.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Payment } from '../../../examples/windowed-totals-postgres.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { POSTGRES_TEST_DATABASE, POSTGRES_TEST_SUPERUSER, type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', '..', 'examples', 'windowed-totals-postgres.ts');
const TABLE =
  'CREATE TABLE account_totals (account text, window_start timestamptz, window_end timestamptz, total bigint NOT NULL, payments int NOT NULL, PRIMARY KEY (account, window_start))';
const BASE = Date.UTC(2026, 0, 1);
const ACCOUNTS = 8;
const COUNT = 4000;

/** Payment `seq`: 75 ms of event time apart (5 minutes in all), accounts a0..a7, partition = account modulo 2. */
const paymentOf = (seq: number): Payment => ({ account: `a${seq % ACCOUNTS}`, amount: (seq % 50) + 1, ts: BASE + seq * 75 });

type TotalRow = {
  account: string;
  window_start: string;
  total: string;
  payments: number;
};

function expectedTotals(): string[] {
  const totals = new Map<string, { total: number; payments: number }>();
  for (let seq = 0; seq < COUNT; seq++) {
    const payment = paymentOf(seq);
    const id = `${payment.account} ${new Date(payment.ts - (payment.ts % 60_000)).toISOString()}`;
    const current = totals.get(id) ?? { total: 0, payments: 0 };
    current.total += payment.amount;
    current.payments++;
    totals.set(id, current);
  }
  return [...totals].map(([id, { total, payments }]) => `${id} ${total} ${payments}`).sort();
}

describe('examples/windowed-totals-postgres.ts against the real broker and PostgreSQL', () => {
  let server: PostgresTestServer;
  let topic: { topic: string; remove: () => Promise<void> };
  let folder: string;
  const brokers = testBrokers();
  before(async () => {
    server = await startPostgres({ maxPreparedTransactions: 20 });
    await server.query(TABLE);
    topic = await createTestTopic(brokers, 'windowed-totals-example', 2);
    folder = await mkdtemp(join(tmpdir(), 'weir-pg-example-'));
  });
  after(async () => {
    await server?.stop();
    await topic?.remove().catch(() => {});
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });

  const produce = async (payments: Payment[]) => {
    const connections = new ClusterConnections(brokers);
    try {
      await new PlainProducer(connections).send(
        payments.map((payment) => ({
          topic: topic.topic,
          partition: Number(payment.account.slice(1)) % 2,
          key: Buffer.from(payment.account),
          value: Buffer.from(JSON.stringify(payment)),
        })),
        -1,
      );
    } finally {
      await connections.close();
    }
  };
  const rows = async () =>
    (
      await server.query<TotalRow>(
        `SELECT account, to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS window_start, total::text, payments FROM account_totals`,
      )
    )
      .map((row) => `${row.account} ${row.window_start} ${row.total} ${row.payments}`)
      .sort();

  test('SIGKILLed while writing windows, restarted: one row per account and window, at the input totals; nothing left prepared', async () => {
    const env = {
      PAYMENTS_TOPIC: topic.topic,
      PGHOST: '127.0.0.1',
      PGPORT: String(server.port),
      PGUSER: POSTGRES_TEST_SUPERUSER,
      PGDATABASE: POSTGRES_TEST_DATABASE,
    };
    const config = {
      workers: 2,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };
    const payments = Array.from({ length: COUNT }, (_, seq) => paymentOf(seq));
    // The first half: its first windows close (the watermark passes them) and are written.
    await produce(payments.slice(0, COUNT / 2));
    const first = startJobProcess(jobModule, config, env);
    await waitFor('the first windows in account_totals', async () => (await rows()).length >= ACCOUNTS, 60_000).catch((error) => {
      throw new Error(`${error}\n${first.stderr}`);
    });
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL', first.stderr);
    // What readers saw before the kill: whole windows only, each at its final total.
    const expected = expectedTotals();
    const seen = await rows();
    for (const row of seen) assert.ok(expected.includes(row), `${row}: a window row not at its total`);

    // The rest, and one payment per partition an hour later: the watermark passes every window of the input.
    await produce([...payments.slice(COUNT / 2), { account: 'a0', amount: 0, ts: BASE + 3_600_000 }, { account: 'a1', amount: 0, ts: BASE + 3_600_000 }]);
    const second = startJobProcess(jobModule, config, env);
    await waitFor('every window in account_totals', async () => (await rows()).length >= expected.length, 90_000).catch((error) => {
      throw new Error(`${error}\n${second.stderr}`);
    });
    // A moment more: a window written twice or a stray row would show.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    second.child.kill('SIGTERM');
    const exit = await second.exit;
    assert.equal(exit.code, 0, second.stderr);
    assert.match(second.stdout, /cancelled after/);

    assert.deepEqual(await rows(), expected);
    assert.equal(expected.length, ACCOUNTS * 5);
    assert.deepEqual(await server.query('SELECT gid FROM pg_prepared_xacts'), []);
  });
});
