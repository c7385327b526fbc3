/**
 * The PostgreSQL sink's preflight refuses a gid prefix another job uses (issue 36 point 3), against
 * a real PostgreSQL: a prepared transaction under the prefix in another database or of another role
 * (this sink's recovery could not end it, and its gids would collide: they are unique in the whole
 * server), and a live job writing under the prefix (its sessions name it) are refused before the
 * job starts, naming the gids or sessions, the gidPrefix setting and the fix. The job's own
 * leftovers (same database, same role, no live session) are not refused: its restore ends them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { defaultGidPrefix, sinkSessionName } from '../../../src/connectors/postgres/postgres-gid.ts';
import { postgresSink } from '../../../src/connectors/postgres/postgres-sink.ts';
import { environmentConfigSchema } from '../../../src/core/config/environment-config.ts';
import { POSTGRES_KEYED_SUM_TABLES } from '../../fixtures/jobs/postgres-keyed-sum-job.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditPostgresKeyedSum } from '../../harness/postgres-keyed-sum-audit.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');
const config = environmentConfigSchema.parse({ parallelism: 2, checkpointing: { interval: '1s', storage: '/tmp/unused' } });
const context = { jobName: 'orders', uid: 'totals', config, exactlyOnce: true };
type Total = { key: string; total: number };
const upsert = (connectionString: string) =>
  postgresSink<Total, Total>({ connectionString, table: 'totals', columns: ['key', 'total'], key: ['key'], mode: 'upsert', toRow: (record) => record });

/** Prepares a transaction that wrote a row, on its own connection, as `connectionString`'s role in its database. */
async function prepare(connectionString: string, gid: string, table: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${table} (key, total) VALUES ($1, 1)`, [gid]);
    await client.query(`PREPARE TRANSACTION '${gid}'`);
  } finally {
    await client.end();
  }
}

describe('postgresSink preflight: a gid prefix another job uses', () => {
  let server: PostgresTestServer;
  const folders: string[] = [];
  before(async () => {
    server = await startPostgres({ maxPreparedTransactions: 20 });
    await server.query('CREATE TABLE totals (key text PRIMARY KEY, total bigint NOT NULL)');
    await server.query('CREATE ROLE weir_other LOGIN');
    await server.query('GRANT INSERT, SELECT, UPDATE ON totals TO weir_other');
    await server.query('CREATE DATABASE other');
    const other = new pg.Client({ connectionString: server.connectionString.replace(/\/weir$/, '/other') });
    await other.connect();
    await other.query('CREATE TABLE totals (key text PRIMARY KEY, total bigint NOT NULL)');
    await other.end();
  });
  after(async () => {
    await server?.stop();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const rollbackAll = async () => {
    for (const { gid, database } of await server.query<{ gid: string; database: string }>('SELECT gid, database FROM pg_prepared_xacts')) {
      const client = new pg.Client({ connectionString: server.connectionString.replace(/\/weir$/, `/${database}`) });
      await client.connect();
      await client.query(`ROLLBACK PREPARED '${gid}'`);
      await client.end();
    }
  };

  test('a prepared transaction under the prefix in another database is refused: gid, database, gidPrefix and the fix named', async () => {
    await rollbackAll();
    await prepare(server.connectionString.replace(/\/weir$/, '/other'), 'weir-orders-totals-1-7', 'totals');
    const findings = (await upsert(server.connectionString).preflight?.(context)) ?? [];
    assert.equal(findings.length, 1, JSON.stringify(findings));
    const [finding] = findings;
    assert.equal(finding?.level, 'error');
    assert.match(
      finding?.message ?? '',
      /gid prefix "weir-orders-totals" is another job's: prepared transaction "weir-orders-totals-1-7" \(database "other", role "weir_admin"/,
    );
    assert.match(finding?.hint ?? '', /gidPrefix/);
    assert.match(finding?.hint ?? '', /COMMIT PREPARED 'weir-orders-totals-1-7'.*ROLLBACK PREPARED 'weir-orders-totals-1-7'/);
  });

  test("a prepared transaction under the prefix of another role is refused; the job's own leftovers and other prefixes are not", async () => {
    await rollbackAll();
    await prepare(server.connectionStringFor('weir_other'), 'weir-orders-totals-0-3', 'totals');
    const [finding] = (await upsert(server.connectionString).preflight?.(context)) ?? [];
    assert.match(finding?.message ?? '', /prepared transaction "weir-orders-totals-0-3" \(database "weir", role "weir_other"/);
    await rollbackAll();
    // Same database, same role, nobody connected under the prefix: a crashed run of this job's, for its restore to end.
    await prepare(server.connectionString, 'weir-orders-totals-0-4', 'totals');
    // Another sink's, whose prefix merely starts with this one.
    await prepare(server.connectionStringFor('weir_other'), 'weir-orders-totals-x-0-4', 'totals');
    assert.deepEqual(await upsert(server.connectionString).preflight?.(context), []);
    await rollbackAll();
  });

  test('a second copy of a running job (same job name and sink uids, its own checkpoints) is refused before it starts; the running one is undisturbed', async () => {
    await rollbackAll();
    await server.query('DROP TABLE IF EXISTS sum_events, sum_totals');
    for (const statement of POSTGRES_KEYED_SUM_TABLES) await server.query(statement);
    const runConfig = async () => {
      const folder = await mkdtemp(join(tmpdir(), 'weir-pg-prefix-'));
      folders.push(folder);
      return {
        parallelism: 2,
        workers: 2,
        checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
        restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
      };
    };
    // Long enough to outlast the copy's start however slow the machine; cancelled once the copy is refused.
    const count = 400_000;
    const env = { PGS_URL: server.connectionString, PGS_COUNT: String(count), PGS_RATE: '4000' };
    const running = startJobProcess(jobModule, await runConfig(), env);
    await waitFor(
      'the first copy writing',
      async () => Number((await server.query<{ n: string }>('SELECT count(*) AS n FROM sum_events'))[0]?.n) > 1_000,
      30_000,
    ).catch((error) => {
      throw new Error(`${error}: ${running.stdout}\n${running.stderr}`);
    });
    const copy = startJobProcess(jobModule, await runConfig(), env);
    const copyExit = await copy.exit;
    assert.equal(running.child.exitCode, null, 'the first copy still runs');
    assert.equal(copyExit.code, 1, `${copy.stdout}\n${copy.stderr}`);
    const prefix = defaultGidPrefix('postgres-keyed-sum', 'events');
    assert.ok(
      copy.stderr.includes(
        `postgres sink "events": another live job writes under its gid prefix "${prefix}": session "${sinkSessionName(prefix, 0, 'write')}"`,
      ),
      copy.stderr,
    );
    assert.match(copy.stderr, /gidPrefix/);
    assert.doesNotMatch(copy.stderr, /running datagen/, 'refused before it started');
    running.child.kill('SIGTERM'); // cancels: its end commits what its latest checkpoint holds
    const exit = await running.exit;
    assert.equal(exit.code, 0, running.stderr);
    assert.match(running.stdout, /finished after 0 restarts|cancelled after 0 restarts/, 'the first copy ran undisturbed');
    // What is there is the first copy's consistent prefix of the input: no duplicates, exact running sums.
    const audit = await auditPostgresKeyedSum(server, count);
    assert.ok(audit.rows > 1_000);
    assert.equal(audit.duplicates, 0);
    assert.equal(audit.wrongSums, 0);
    assert.deepEqual(await server.query('SELECT gid FROM pg_prepared_xacts'), [], 'nothing stays prepared');
  });
});
