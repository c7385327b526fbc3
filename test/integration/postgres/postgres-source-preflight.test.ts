/**
 * postgresSource's preflight and start checks against a real PostgreSQL: wal_level not logical,
 * the publication missing, a role without REPLICATION, max_replication_slots exhausted, and a slot
 * that exists with no checkpoint to restore: each refused with the setting (or the slot) and the fix.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { postgresSource } from '../../../src/connectors/postgres-source/postgres-source.ts';
import { environmentConfigSchema } from '../../../src/core/config/environment-config.ts';
import { POSTGRES_CDC_TABLES } from '../../fixtures/jobs/postgres-cdc-job.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-cdc-job.ts');
const config = environmentConfigSchema.parse({ parallelism: 1, checkpointing: { interval: '1s', storage: '/tmp/unused' } });
const context = { jobName: 'cdc', uid: 'cdc', config, exactlyOnce: true };

async function runJob(server: PostgresTestServer) {
  const folder = await mkdtemp(join(tmpdir(), 'weir-pg-source-preflight-'));
  try {
    const run = startJobProcess(
      jobModule,
      { parallelism: 1, workers: 1, checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') }, restartStrategy: { type: 'none' } },
      { PGC_URL: server.connectionString },
    );
    return { exit: await run.exit, stderr: run.stderr };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

describe('postgresSource preflight against a real PostgreSQL', () => {
  let server: PostgresTestServer;
  before(async () => {
    // Two slots at most: the source needs two (its own and the snapshot's temporary one).
    server = await startPostgres({ maxReplicationSlots: 2 });
    for (const statement of POSTGRES_CDC_TABLES) await server.query(statement);
    await server.query('CREATE ROLE weir_reader LOGIN');
    await server.query('GRANT SELECT ON cdc_items TO weir_reader');
  });
  after(async () => {
    await server?.stop();
  });

  test('wal_level = replica: the job is refused before it starts, naming wal_level and the fix', async () => {
    const replica = await startPostgres({ walLevel: 'replica' });
    try {
      for (const statement of POSTGRES_CDC_TABLES) await replica.query(statement);
      const { exit, stderr } = await runJob(replica);
      assert.equal(exit.code, 1, stderr);
      assert.match(stderr, /postgres source "cdc": wal_level is 'replica': logical replication needs wal_level = logical/);
      assert.match(stderr, /set wal_level = logical .* and restart PostgreSQL/);
      assert.deepEqual(await replica.query('SELECT count(*)::int AS n FROM pg_replication_slots'), [{ n: 0 }]);
    } finally {
      await replica.stop();
    }
  });

  test('a missing publication and a table outside it are named', async () => {
    const findings = await postgresSource({ connectionString: server.connectionString, slot: 's1', publication: 'nope', tables: ['cdc_log'] }).preflight?.(
      context,
    );
    assert.deepEqual(
      findings?.map((finding) => finding.message),
      ['postgres source "cdc": publication "nope" does not exist in database "weir"'],
    );
    assert.match(findings?.[0]?.hint ?? '', /CREATE PUBLICATION "nope" FOR TABLE/);
    const outside = await postgresSource({ connectionString: server.connectionString, slot: 's1', publication: 'cdc_pub', tables: ['cdc_log'] }).preflight?.(
      context,
    );
    assert.deepEqual(
      outside?.map((finding) => finding.message),
      ['postgres source "cdc": table public.cdc_log is not in publication "cdc_pub"'],
    );
  });

  test('a role without REPLICATION is named, with the ALTER ROLE that fixes it', async () => {
    const findings = await postgresSource({ connectionString: server.connectionStringFor('weir_reader'), slot: 's1', publication: 'cdc_pub' }).preflight?.(
      context,
    );
    assert.deepEqual(
      findings?.map((finding) => finding.message),
      ['postgres source "cdc": role "weir_reader" lacks the REPLICATION attribute, which a replication slot and its stream need'],
    );
    assert.match(findings?.[0]?.hint ?? '', /ALTER ROLE "weir_reader" WITH REPLICATION/);
  });

  test('max_replication_slots exhausted: named with the count and the fix', async () => {
    await server.query("SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')");
    try {
      const findings = await postgresSource({ connectionString: server.connectionString, slot: 'cdc_slot', publication: 'cdc_pub' }).preflight?.(context);
      assert.deepEqual(
        findings?.map((finding) => finding.message),
        ['postgres source "cdc": max_replication_slots (2) is exhausted: 1 slots exist and the source needs 2 more'],
      );
      assert.match(findings?.[0]?.hint ?? '', /raise max_replication_slots/);
      // Without a snapshot it needs one slot only.
      const never = await postgresSource({
        connectionString: server.connectionString,
        slot: 'cdc_slot',
        publication: 'cdc_pub',
        snapshot: 'never',
      }).preflight?.(context);
      assert.deepEqual(never, []);
    } finally {
      await server.query("SELECT pg_drop_replication_slot('someone_else')");
    }
  });

  test('a slot that exists with no checkpoint of this job to restore: refused, naming the slot and the fixes; nothing read', async () => {
    await server.query("SELECT pg_create_logical_replication_slot('cdc_slot', 'pgoutput')");
    try {
      const { exit, stderr } = await runJob(server);
      assert.equal(exit.code, 1, stderr);
      assert.match(stderr, /replication slot "cdc_slot" exists already, and the job has no checkpoint of it to restore/);
      assert.match(stderr, /drop it \(SELECT pg_drop_replication_slot\('cdc_slot'\)\) to start with a new snapshot, set snapshot: 'never'/);
      assert.deepEqual(await server.query('SELECT count(*)::int AS n FROM cdc_log'), [{ n: 0 }]);
    } finally {
      await server.query("SELECT pg_drop_replication_slot('cdc_slot')");
    }
  });
});
