/**
 * Issue 35, point 1: the same job, through one process and through three cluster members, writes
 * the same output, record for record. Each case runs a job as it ships (the examples of examples/
 * and the demo's job), unchanged, on the same deterministic input: once with `weir run`, once with
 * `weir run --cluster` on three members, at the same time, each until its output is complete; both
 * outputs are then read back read_committed and compared, per key in order where the job defines
 * the order (keyed running balances, a key's windows), as multisets otherwise (async enrichment,
 * keyed by order id). Each is also checked against what the input says it must be, so two runs
 * wrong the same way do not pass.
 *
 * The examples name their topics (`payments`, `balances`, `orders`, ...): they run on two brokers
 * of the test's own, one per mode. The PostgreSQL example and the demo take their topics from the
 * environment and share the test broker. Every output here is determined by the input: the event
 * -time windows close on the input's own event time (the watermark never passes a record of the
 * input: each partition's records are at most 2 s out of order against 5 s allowed, and a closing
 * record far ahead in every partition fires every window), and nothing depends on processing time.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { keyGroupOf } from '../../../src/connectors/kafka/key-group-partitioner.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { type CustomersProxy, startCustomersProxy, tierOf } from '../../harness/customers-proxy.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { POSTGRES_TEST_DATABASE, POSTGRES_TEST_SUPERUSER, type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';
import {
  assertSameOutput,
  countOf,
  createFixedTopics,
  type InputRecord,
  outputComplete,
  produceJson,
  readByKey,
  startBoth,
  withLogs,
} from '../../harness/same-output.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const example = (name: string) => join(root, 'examples', name);
const BASE = Date.UTC(2026, 0, 1);

/** Keeps only the keys starting with `prefix` (two examples write `balances`). */
const only = (byKey: Map<string, string[]>, prefix: string) => new Map([...byKey].filter(([key]) => key.startsWith(prefix)));

/** Per account, the running balances of `payments` in input order, as the examples' balances operator writes them. */
function runningBalances<P extends { account: string; amount: number }>(payments: readonly P[]): Map<string, string[]> {
  const balance = new Map<string, number>();
  const out = new Map<string, string[]>();
  for (const payment of payments) {
    const next = (balance.get(payment.account) ?? 0) + payment.amount;
    balance.set(payment.account, next);
    out.set(payment.account, [...(out.get(payment.account) ?? []), JSON.stringify({ ...payment, balance: next })]);
  }
  return out;
}

describe('the same jobs through one process and through three cluster members (issue 35)', { concurrency: 2 }, () => {
  const folders: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  /** Brokers of the test's own, for the examples' fixed topic names: one per mode. */
  const own: { oneProcess: BrokerAddress[]; cluster: BrokerAddress[] } = { oneProcess: [], cluster: [] };
  let shared: BrokerAddress[];

  before(async () => {
    shared = testBrokers();
    const [a, b] = await Promise.all(
      ['one', 'cluster'].map(async (label) => {
        const folder = await mkdtemp(join(tmpdir(), `weir-same-kafka-${label}-`));
        folders.push(folder);
        const state = await startLocalBroker({ dataDir: join(folder, 'kafka'), port: await freePort(), wipe: true, heapMb: 384 });
        cleanups.push(() =>
          stopLocalBroker({ dataDir: join(folder, 'kafka'), timeoutMs: 3000 }) /* its data is thrown away: no controlled shutdown to wait for */
            .then(() => undefined),
        );
        return [{ host: state.host, port: state.port }];
      }),
    );
    own.oneProcess = a as BrokerAddress[];
    own.cluster = b as BrokerAddress[];
    await Promise.all(
      [own.oneProcess, own.cluster].map((brokers) =>
        createFixedTopics(brokers, { payments: 4, 'payments-by-account': 12, balances: 3, orders: 4, 'orders-enriched': 3 }),
      ),
    );
  });
  after(async () => {
    await Promise.all(cleanups.map((cleanup) => cleanup().catch(() => {})));
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });

  test('examples/balances-job.ts: every running balance, per account in order', async () => {
    const payments = Array.from({ length: 2000 }, (_, seq) => ({ seq, account: `b${seq % 40}`, amount: (seq % 13) - 4 }));
    const input: InputRecord[] = payments.map((payment) => ({ partition: Number(payment.account.slice(1)) % 4, key: payment.account, value: payment }));
    await Promise.all([produceJson(own.oneProcess, 'payments', input), produceJson(own.cluster, 'payments', input)]);
    const both = await startBoth({ module: example('balances-job.ts'), brokers: own, oneProcessEnv: {}, clusterEnv: {}, label: 'balances' });
    try {
      await withLogs(both, async () => {
        const balances = async (brokers: BrokerAddress[]) => only(await readByKey(brokers, 'balances'), 'b');
        await Promise.all([
          both.watch(
            [both.oneProcess],
            'one process',
            outputComplete('one process: every balance', async () => countOf(await balances(own.oneProcess)), payments.length, both.signal),
          ),
          both.watch(
            both.members,
            'cluster',
            outputComplete('cluster: every balance', async () => countOf(await balances(own.cluster)), payments.length, both.signal),
          ),
        ]);
        const [one, cluster] = await Promise.all([balances(own.oneProcess), balances(own.cluster)]);
        assertSameOutput('balances', one, cluster, true);
        assertSameOutput('balances against the input', runningBalances(payments), one, true);
      });
    } finally {
      await both.stop();
    }
  });

  test('examples/reinterpret-keyed.ts: every running balance, per account in order, without an exchange', async () => {
    const payments = Array.from({ length: 1200 }, (_, seq) => ({ account: `r${seq % 24}`, amount: (seq % 11) + 1 }));
    const input: InputRecord[] = payments.map((payment) => ({ partition: keyGroupOf(payment.account, 12), key: payment.account, value: payment }));
    await Promise.all([produceJson(own.oneProcess, 'payments-by-account', input), produceJson(own.cluster, 'payments-by-account', input)]);
    const both = await startBoth({ module: example('reinterpret-keyed.ts'), brokers: own, oneProcessEnv: {}, clusterEnv: {}, label: 'reinterpret' });
    try {
      await withLogs(both, async () => {
        const balances = async (brokers: BrokerAddress[]) => only(await readByKey(brokers, 'balances'), 'r');
        await Promise.all([
          both.watch(
            [both.oneProcess],
            'one process',
            outputComplete('one process: every balance', async () => countOf(await balances(own.oneProcess)), payments.length, both.signal),
          ),
          both.watch(
            both.members,
            'cluster',
            outputComplete('cluster: every balance', async () => countOf(await balances(own.cluster)), payments.length, both.signal),
          ),
        ]);
        const [one, cluster] = await Promise.all([balances(own.oneProcess), balances(own.cluster)]);
        assertSameOutput('balances', one, cluster, true);
        assertSameOutput('balances against the input', runningBalances(payments), one, true);
      });
    } finally {
      await both.stop();
    }
  });

  test('examples/async-enrichment.ts: every order enriched once (404s dropped, 503s retried)', async () => {
    const missing = new Set(['c3', 'c13']);
    const flaky = new Set(['c5', 'c10']);
    const orders = Array.from({ length: 1500 }, (_, seq) => ({ id: `o${seq}`, customer: `c${seq % 20}`, amount: (seq % 90) + 10 }));
    const input: InputRecord[] = orders.map((order) => ({ partition: Number(order.customer.slice(1)) % 4, key: order.id, value: order }));
    await Promise.all([produceJson(own.oneProcess, 'orders', input), produceJson(own.cluster, 'orders', input)]);
    const proxies: CustomersProxy[] = await Promise.all([startCustomersProxy(missing, flaky), startCustomersProxy(missing, flaky)]);
    const [oneProxy, clusterProxy] = proxies as [CustomersProxy, CustomersProxy];
    const both = await startBoth({
      module: example('async-enrichment.ts'),
      brokers: own,
      oneProcessEnv: oneProxy.env,
      clusterEnv: clusterProxy.env,
      label: 'enrich',
    });
    try {
      await withLogs(both, async () => {
        const expected = new Map(
          orders.filter((order) => !missing.has(order.customer)).map((order) => [order.id, [JSON.stringify({ ...order, tier: tierOf(order.customer) })]]),
        );
        const enriched = (brokers: BrokerAddress[]) => readByKey(brokers, 'orders-enriched');
        const present = (byKey: Map<string, string[]>) => [...expected.keys()].filter((id) => byKey.has(id)).length;
        await Promise.all([
          both.watch(
            [both.oneProcess],
            'one process',
            outputComplete('one process: every order', async () => present(await enriched(own.oneProcess)), expected.size, both.signal),
          ),
          both.watch(
            both.members,
            'cluster',
            outputComplete('cluster: every order', async () => present(await enriched(own.cluster)), expected.size, both.signal),
          ),
        ]);
        const [one, cluster] = await Promise.all([enriched(own.oneProcess), enriched(own.cluster)]);
        // The example's own 2 s timeout (processing time) keeps an order as tier "unknown" when its
        // answer is late, as it may be on a busy machine, in either run: such an order is compared as
        // "timed out" (it must still be there once, whatever its customer); every order answered in
        // both runs must be the same, and every order of a known customer there once.
        const timedOut = (byKey: Map<string, string[]>) => [...byKey.values()].flat().filter((value) => value.includes('"tier":"unknown"')).length;
        const said = `customer requests: one process ${oneProxy.requests()}, cluster ${clusterProxy.requests()}; timed out: one process ${timedOut(one)}, cluster ${timedOut(cluster)}`;
        const byId = new Map(orders.map((order) => [order.id, order]));
        const answeredInBoth = (byKey: Map<string, string[]>, other: Map<string, string[]>) =>
          new Map(
            [...byKey].filter(
              ([id, values]) =>
                !values.some((value) => value.includes('"tier":"unknown"')) && !(other.get(id) ?? []).some((value) => value.includes('"tier":"unknown"')),
            ),
          );
        for (const [name, output] of [
          ['one process', one],
          ['cluster', cluster],
        ] as const) {
          for (const [id, values] of output) {
            const order = byId.get(id);
            assert.ok(order !== undefined && values.length === 1, `${name}: ${id} once, an order of the input (${values.length} times) (${said})`);
            const answer = expected.get(id)?.[0];
            assert.ok(
              values[0] === answer || values[0] === JSON.stringify({ ...order, tier: 'unknown' }),
              `${name}: ${id} is ${values[0]}: its customer's tier, or "unknown" when the answer came late (${said})`,
            );
          }
          assert.equal(present(output), expected.size, `${name}: every order of a known customer (${said})`);
          assert.ok(timedOut(output) < output.size, `${name}: some orders answered in time (${said})`);
        }
        assertSameOutput(`orders-enriched answered in both (${said})`, answeredInBoth(one, cluster), answeredInBoth(cluster, one), false);
      });
    } finally {
      await both.stop();
      for (const proxy of proxies) await proxy.close();
    }
  });

  test('examples/windowed-totals-postgres.ts: one row per account and minute, the same in both tables', async () => {
    const server: PostgresTestServer = await startPostgres({ maxPreparedTransactions: 40 });
    const topic = await createTestTopic(shared, 'same-windowed-totals', 4);
    try {
      await server.query('CREATE DATABASE weir_cluster');
      const table =
        'CREATE TABLE account_totals (account text, window_start timestamptz, window_end timestamptz, total bigint NOT NULL, payments int NOT NULL, PRIMARY KEY (account, window_start))';
      await server.query(table);
      const clusterDb = server.connectionString.replace(/\/[^/]+$/, '/weir_cluster');
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: clusterDb });
      await client.connect();
      const clusterRows = async (): Promise<string[]> =>
        (
          await client.query(
            `SELECT account, to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS window_start, total::text, payments FROM account_totals`,
          )
        ).rows
          .map((row) => `${row.account} ${row.window_start} ${row.total} ${row.payments}`)
          .sort();
      await client.query(table);
      const oneRows = async (): Promise<string[]> =>
        (
          await server.query<{ account: string; window_start: string; total: string; payments: number }>(
            `SELECT account, to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS window_start, total::text, payments FROM account_totals`,
          )
        )
          .map((row) => `${row.account} ${row.window_start} ${row.total} ${row.payments}`)
          .sort();
      const payments = Array.from({ length: 4000 }, (_, seq) => ({ account: `p${seq % 8}`, amount: (seq % 50) + 1, ts: BASE + seq * 75 }));
      const closers = [0, 1, 2, 3].map((partition) => ({ account: `p${partition}`, amount: 0, ts: BASE + 3_600_000 }));
      await produceJson(
        shared,
        topic.topic,
        [...payments, ...closers].map((payment) => ({ partition: Number(payment.account.slice(1)) % 4, key: payment.account, value: payment })),
      );
      const totals = new Map<string, { total: number; payments: number }>();
      for (const payment of payments) {
        const id = `${payment.account} ${new Date(payment.ts - (payment.ts % 60_000)).toISOString()}`;
        const current = totals.get(id) ?? { total: 0, payments: 0 };
        current.total += payment.amount;
        current.payments++;
        totals.set(id, current);
      }
      const expected = [...totals].map(([id, { total, payments: count }]) => `${id} ${total} ${count}`).sort();
      const pgEnv = (database: string) => ({
        PAYMENTS_TOPIC: topic.topic,
        PGHOST: '127.0.0.1',
        PGPORT: String(server.port),
        PGUSER: POSTGRES_TEST_SUPERUSER,
        PGDATABASE: database,
      });
      // A keyed stage has maxParallelism tasks in cluster mode, each with two connections: 8 of them, not 128 (PostgreSQL's max_connections).
      const both = await startBoth({
        module: example('windowed-totals-postgres.ts'),
        brokers: { oneProcess: shared, cluster: shared },
        oneProcessEnv: pgEnv(POSTGRES_TEST_DATABASE),
        clusterEnv: pgEnv('weir_cluster'),
        args: ['--max-parallelism', '8'],
        label: 'pg-totals',
      });
      try {
        await withLogs(both, async () => {
          await Promise.all([
            both.watch(
              [both.oneProcess],
              'one process',
              outputComplete('one process: every window row', async () => (await oneRows()).length, expected.length, both.signal),
            ),
            both.watch(
              both.members,
              'cluster',
              outputComplete('cluster: every window row', async () => (await clusterRows()).length, expected.length, both.signal),
            ),
          ]);
          const [one, cluster] = await Promise.all([oneRows(), clusterRows()]);
          assert.deepEqual(cluster, one, 'the same rows in both tables');
          assert.deepEqual(one, expected, 'the rows of the input');
        });
      } finally {
        await both.stop();
        await client.end();
      }
    } finally {
      await topic.remove().catch(() => {});
      await server.stop();
    }
  });

  test("the demo's job (src/demo/payments-job.ts): every balance per account in order, every minute total", async () => {
    const topics = await Promise.all(
      [
        ['demo-in', 4],
        ['demo-one-balances', 3],
        ['demo-one-totals', 3],
        ['demo-cluster-balances', 3],
        ['demo-cluster-totals', 3],
      ].map(([label, partitions]) => createTestTopic(shared, label as string, partitions as number)),
    );
    const [input, oneBalances, oneTotals, clusterBalances, clusterTotals] = topics.map((topic) => topic.topic) as string[];
    try {
      // Up to 2 s out of order within a partition (the job allows 5 s); then one payment per partition an hour ahead closes every window.
      const payments = Array.from({ length: 2400 }, (_, seq) => ({
        seq,
        account: `d${seq % 24}`,
        amount: (seq % 17) + 1,
        ts: BASE + seq * 50 - ((seq * 7) % 5) * 500,
      }));
      const closers = [0, 1, 2, 3].map((partition) => ({ seq: 10_000 + partition, account: `d${partition}`, amount: 0, ts: BASE + 3_600_000 }));
      const all = [...payments, ...closers];
      await produceJson(
        shared,
        input as string,
        all.map((payment) => ({ partition: Number(payment.account.slice(1)) % 4, key: payment.account, value: payment })),
      );
      const minutes = new Map<string, string[]>();
      const sums = new Map<string, { total: number; payments: number }>();
      for (const payment of [...payments].sort((a, b) => a.ts - b.ts)) {
        const minute = payment.ts - (payment.ts % 60_000);
        const id = `${payment.account}@${minute}`;
        const sum = sums.get(id) ?? { total: 0, payments: 0 };
        if (!sums.has(id)) sums.set(id, sum);
        sum.total += payment.amount;
        sum.payments++;
      }
      for (const [id, sum] of [...sums].sort(([a], [b]) => Number(a.split('@')[1]) - Number(b.split('@')[1]))) {
        const [account, minute] = id.split('@') as [string, string];
        minutes.set(account, [...(minutes.get(account) ?? []), JSON.stringify({ account, minute: Number(minute), total: sum.total, payments: sum.payments })]);
      }
      const demoEnv = (balances: string, totals: string) => ({
        WEIR_DEMO_INPUT: input as string,
        WEIR_DEMO_OUTPUT: balances,
        WEIR_DEMO_TOTALS: totals,
        WEIR_DEMO_GROUP: `${balances}-group`,
      });
      const both = await startBoth({
        module: join(root, 'src', 'demo', 'payments-job.ts'),
        brokers: { oneProcess: shared, cluster: shared },
        oneProcessEnv: demoEnv(oneBalances as string, oneTotals as string),
        clusterEnv: demoEnv(clusterBalances as string, clusterTotals as string),
        label: 'demo',
      });
      try {
        await withLogs(both, async () => {
          const complete = async (balances: string, totals: string) =>
            Math.min(countOf(await readByKey(shared, balances)), countOf(await readByKey(shared, totals)) >= sums.size ? all.length : 0);
          await Promise.all([
            both.watch(
              [both.oneProcess],
              'one process',
              outputComplete('one process: every balance and total', () => complete(oneBalances as string, oneTotals as string), all.length, both.signal),
            ),
            both.watch(
              both.members,
              'cluster',
              outputComplete('cluster: every balance and total', () => complete(clusterBalances as string, clusterTotals as string), all.length, both.signal),
            ),
          ]);
          const [oneB, clusterB, oneT, clusterT] = await Promise.all(
            [oneBalances, clusterBalances, oneTotals, clusterTotals].map((topic) => readByKey(shared, topic as string)),
          );
          assertSameOutput('balances', oneB as Map<string, string[]>, clusterB as Map<string, string[]>, true);
          assertSameOutput('balances against the input', runningBalances(all), oneB as Map<string, string[]>, true);
          assertSameOutput('minute totals', oneT as Map<string, string[]>, clusterT as Map<string, string[]>, true);
          assertSameOutput('minute totals against the input', minutes, oneT as Map<string, string[]>, true);
        });
      } finally {
        await both.stop();
      }
    } finally {
      for (const topic of topics) await topic.remove().catch(() => {});
    }
  });
});
