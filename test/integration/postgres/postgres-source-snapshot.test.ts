/**
 * postgresSource's initial snapshot killed half way, against a real PostgreSQL: the snapshot is
 * read from a temporary slot, so a SIGKILL during it leaves no slot behind, and the next run
 * reads it again whole (every row once, as 'snapshot') before the changes. A snapshot larger than
 * maxBufferedChanges is emitted as it is read: a checkpoint inside it would hold part of it, so the
 * source declines it (not ready, as Flink's CHECKPOINT_DECLINED_TASK_NOT_READY, not counted as a
 * failure) and the job goes on; the first checkpoint after the snapshot holds all of it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_CDC_TABLES } from '../../fixtures/jobs/postgres-cdc-job.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditCdc, CdcWriter, freshCdcTables } from '../../harness/postgres-cdc-writer.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-cdc-job.ts');

describe('postgresSource: the initial snapshot and failures', () => {
  let server: PostgresTestServer;
  const folders: string[] = [];
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const slots = async () => (await server.query<{ slot_name: string }>('SELECT slot_name FROM pg_replication_slots ORDER BY 1')).map((row) => row.slot_name);
  /** Waits until the log holds as many changes as the writer made, then audits them: every change once, the mirror equal to the table. */
  const assertEveryChangeOnce = async (writer: CdcWriter) => {
    await waitFor(
      'every change logged',
      async () => Number((await server.query<{ n: string }>('SELECT count(*) AS n FROM cdc_log'))[0]?.n) >= writer.changeCount,
      30_000,
    );
    await sleep(500);
    assert.deepEqual(await auditCdc(server, writer.expected), { rows: writer.changeCount, wrongKeys: [], duplicates: 0, missing: 0, wrongMirror: [] });
  };
  const config = async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-pg-cdc-snapshot-'));
    folders.push(folder);
    return {
      parallelism: 2,
      workers: 1,
      checkpointing: { interval: '150ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'none' },
    };
  };

  test('SIGKILL during the snapshot: no slot is left, the next run reads the snapshot again whole, then the changes; every row once', async () => {
    await freshCdcTables(server, POSTGRES_CDC_TABLES);
    const writer = new CdcWriter(7);
    await writer.seed(server, 300);
    const settings = await config();
    const env = { PGC_URL: server.connectionString, PGC_FETCH: '50' };
    const first = startJobProcess(jobModule, settings, { ...env, WEIR_TEST_POSTGRES_SOURCE_DELAY: 'snapshot-fetch:300' });
    await waitFor(
      'the snapshot under way and a checkpoint',
      async () => (await slots()).some((slot) => slot.startsWith('cdc_slot_snapshot_')) && /^checkpoint \d+$/m.test(first.stdout),
      30_000,
    );
    await sleep(400);
    first.child.kill('SIGKILL');
    await first.exit;
    await waitFor('the temporary slot gone with its session', async () => (await slots()).length === 0, 10_000);

    const second = startJobProcess(jobModule, settings, env);
    try {
      await waitFor('the slot, once the snapshot is read', async () => (await slots()).includes('cdc_slot'), 30_000);
      assert.match(second.stderr, /starting job "postgres-cdc" from checkpoint \d+/);
      await writer.write(server.connectionString, 100, 200);
      await assertEveryChangeOnce(writer);
    } finally {
      second.child.kill('SIGKILL');
      await second.exit;
    }
  });

  test('SIGKILL once the snapshot is read and its slot made, before a checkpoint holds the stream: the restore drops that slot and takes the snapshot again; every row once', async () => {
    await freshCdcTables(server, POSTGRES_CDC_TABLES);
    const writer = new CdcWriter(9);
    await writer.seed(server, 100);
    const settings = { ...(await config()) };
    settings.checkpointing = { ...settings.checkpointing, interval: '1500ms' };
    const env = { PGC_URL: server.connectionString };
    const first = startJobProcess(jobModule, settings, env);
    await waitFor('the slot, once the snapshot is read', async () => (await slots()).includes('cdc_slot'), 30_000);
    first.child.kill('SIGKILL');
    await first.exit;
    const checkpoints = [...first.stdout.matchAll(/^checkpoint (\d+)$/gm)].map((match) => Number(match[1]));
    assert.deepEqual(checkpoints, [1], 'the first checkpoint (before the snapshot) only');
    assert.deepEqual(await slots(), ['cdc_slot'], 'the slot is left behind');

    const second = startJobProcess(jobModule, settings, env);
    try {
      await waitFor('a checkpoint of the second run', () => /^checkpoint \d+$/m.test(second.stdout), 30_000);
      assert.match(second.stderr, /starting job "postgres-cdc" from checkpoint 1/);
      await writer.write(server.connectionString, 50, 200);
      await assertEveryChangeOnce(writer);
    } finally {
      second.child.kill('SIGKILL');
      await second.exit;
    }
  });

  test('a snapshot larger than maxBufferedChanges: the checkpoints during it are declined (not ready, not failures), the job goes on; every row once, then the changes', async () => {
    await freshCdcTables(server, POSTGRES_CDC_TABLES);
    const writer = new CdcWriter(8);
    await writer.seed(server, 200);
    const run = startJobProcess(
      jobModule,
      { ...(await config()), checkpointing: { ...(await config()).checkpointing, tolerableFailures: 0 } },
      {
        PGC_URL: server.connectionString,
        PGC_FETCH: '20',
        PGC_BUFFERED: '20',
        WEIR_TEST_POSTGRES_SOURCE_DELAY: 'snapshot-fetch:100',
        WEIR_LOG_LEVEL: 'debug',
      },
    );
    try {
      await waitFor('the slot, once the snapshot is read', async () => (await slots()).includes('cdc_slot'), 60_000);
      await writer.write(server.connectionString, 50, 100);
      await assertEveryChangeOnce(writer);
      assert.match(run.stderr, /is in its initial snapshot \(\d+ rows emitted\)/, 'a checkpoint came during the snapshot and was declined');
      assert.equal(run.child.exitCode, null, `the job runs on: ${run.stderr}`);
    } finally {
      run.child.kill('SIGKILL');
      await run.exit;
    }
  });
});
