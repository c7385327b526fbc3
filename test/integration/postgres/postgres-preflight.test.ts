/**
 * The PostgreSQL sink's preflight against a real PostgreSQL: a server with prepared transactions
 * off (PostgreSQL's default) refuses the job before it starts, naming the setting and the fix;
 * a missing table, column or key and a role without the rights an upsert needs are named.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { postgresSink } from '../../../src/connectors/postgres/postgres-sink.ts';
import { environmentConfigSchema } from '../../../src/core/config/environment-config.ts';
import { POSTGRES_KEYED_SUM_TABLES } from '../../fixtures/jobs/postgres-keyed-sum-job.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');
const config = environmentConfigSchema.parse({ parallelism: 2, checkpointing: { interval: '1s', storage: '/tmp/unused' } });
const context = { jobName: 'orders', uid: 'totals', config, exactlyOnce: true };
type Total = { key: string; total: number };
const upsert = (connectionString: string, table = 'totals', columns: (keyof Total)[] = ['key', 'total']) =>
  postgresSink<Total, Total>({ connectionString, table, columns, key: ['key'], mode: 'upsert', toRow: (record) => record });

describe('postgresSink preflight against a real PostgreSQL', () => {
  let server: PostgresTestServer;
  before(async () => {
    server = await startPostgres({ maxPreparedTransactions: 10 });
    await server.query('CREATE TABLE totals (key text PRIMARY KEY, total bigint NOT NULL)');
    await server.query('CREATE TABLE no_key (key text NOT NULL, total bigint NOT NULL)');
    await server.query('CREATE ROLE weir_limited LOGIN');
    await server.query('GRANT INSERT, UPDATE ON totals TO weir_limited');
  });
  after(async () => {
    await server?.stop();
  });

  test('max_prepared_transactions = 0: the job is refused before it starts, with the setting and the fix', async () => {
    const off = await startPostgres({ maxPreparedTransactions: 0 });
    const folder = await mkdtemp(join(tmpdir(), 'weir-pg-preflight-'));
    try {
      for (const statement of POSTGRES_KEYED_SUM_TABLES) await off.query(statement);
      const run = startJobProcess(
        jobModule,
        { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
        { PGS_URL: off.connectionString, PGS_COUNT: '1000' },
      );
      const exit = await run.exit;
      assert.equal(exit.code, 1, run.stderr);
      assert.match(
        run.stderr,
        /postgres sink "events": the server's max_prepared_transactions is 0 \(PostgreSQL's default\), so it refuses PREPARE TRANSACTION/,
      );
      assert.match(run.stderr, /set max_prepared_transactions to at least 4 .*then restart PostgreSQL/);
      assert.deepEqual(await off.query('SELECT count(*)::int AS n FROM sum_events'), [{ n: 0 }]);
    } finally {
      await off.stop();
      await rm(folder, { recursive: true, force: true });
    }
  });

  test('a healthy table, key and role: no findings', async () => {
    assert.deepEqual(await upsert(server.connectionString).preflight?.(context), []);
  });

  test('a missing table, column and key are named', async () => {
    const [missingTable] = (await upsert(server.connectionString, 'totalz').preflight?.(context)) ?? [];
    assert.match(
      missingTable?.message ?? '',
      /postgres sink "totals": table "totalz" does not exist in database "weir" \(on role "weir_admin"'s search_path\)/,
    );
    const [missingColumn] = (await upsert(server.connectionString, 'totals', ['key', 'total', 'count' as keyof Total]).preflight?.(context)) ?? [];
    assert.match(missingColumn?.message ?? '', /table "totals" has no column "count" \(it has "key", "total"\)/);
    const [missingKey] = (await upsert(server.connectionString, 'no_key').preflight?.(context)) ?? [];
    assert.match(missingKey?.message ?? '', /table "no_key" has no primary key or unique index on exactly \("key"\)/);
  });

  test('a role without SELECT on the key cannot upsert, and the preflight says so', async () => {
    const limited = server.connectionStringFor('weir_limited');
    const [finding] = (await upsert(limited).preflight?.(context)) ?? [];
    assert.match(finding?.message ?? '', /role "weir_limited" lacks SELECT on "key" of table "totals"/);
    assert.match(finding?.hint ?? '', /GRANT SELECT ON "totals" TO "weir_limited"/);
    // PostgreSQL agrees: ON CONFLICT (key) reads the key.
    const client = new pg.Client({ connectionString: limited });
    await client.connect();
    try {
      await assert.rejects(
        client.query('INSERT INTO totals (key, total) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET total = EXCLUDED.total', ['a', 1]),
        /permission denied for table totals/,
      );
    } finally {
      await client.end();
    }
  });

  test('an unreachable server is one finding naming where', async () => {
    const [finding] = (await upsert('postgres://weir_admin@127.0.0.1:1/weir').preflight?.(context)) ?? [];
    assert.match(finding?.message ?? '', /postgres sink "totals": cannot reach PostgreSQL at 127\.0\.0\.1:1\/weir: .*ECONNREFUSED/);
  });
});
