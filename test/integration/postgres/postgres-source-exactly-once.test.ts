/**
 * postgresSource exactly-once (issue 36 point 5), against a real PostgreSQL: the snapshot of
 * cdc_items, then a writer's inserts, updates and deletes (single and multi-change transactions,
 * some rolled back) while the job (test/fixtures/jobs/postgres-cdc-job.ts: source -> keyBy(table +
 * id) -> count per key -> exactly-once PostgreSQL sinks) is SIGKILLed at random points and once
 * between "checkpoint complete" and the source's LSN acknowledgement, then restarted from its
 * checkpoints. Audit: every committed change exactly once, in order per key (cdc_log by each key's
 * change number), and the mirror equals the table. The same run with the LSN acknowledged at
 * emission (WEIR_TEST_POSTGRES_SOURCE_ACK=at-emission: the bug) loses changes, and the audit says so.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_CDC_TABLES } from '../../fixtures/jobs/postgres-cdc-job.ts';
import { type JobProcess, startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditCdc, CdcWriter, freshCdcTables, seededRandom } from '../../harness/postgres-cdc-writer.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-cdc-job.ts');

describe('postgresSource: exactly-once through SIGKILLs', () => {
  let server: PostgresTestServer;
  const folders: string[] = [];
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });

  /** Fresh tables and slot; the folder of the job's checkpoints. */
  const fresh = async (): Promise<string> => {
    await freshCdcTables(server, POSTGRES_CDC_TABLES);
    const folder = await mkdtemp(join(tmpdir(), 'weir-pg-cdc-'));
    folders.push(folder);
    return folder;
  };

  const lastCheckpoint = (run: JobProcess) => Math.max(0, ...[...run.stdout.matchAll(/^checkpoint (\d+)$/gm)].map((match) => Number(match[1])));

  /** The scenario: kills while the writer writes, one of them between "checkpoint complete" and the acknowledgement; a last run until the log is whole (or `settleMs` passes). */
  async function scenario(seed: number, extraEnv: Record<string, string>, settleMs: number) {
    const folder = await fresh();
    const random = seededRandom(seed);
    const writer = new CdcWriter(seed);
    await writer.seed(server, 30);
    const env = { PGC_URL: server.connectionString, ...extraEnv };
    const config = {
      parallelism: 2,
      workers: 1,
      // Polls of 1 change: a transaction of 2-5 changes is often split by a checkpoint (the restore skips its first part).
      batchSize: 1,
      checkpointing: { interval: '150ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'none' },
    };
    let run = startJobProcess(jobModule, config, env);
    let writing: Promise<void> | undefined;
    try {
      // The writer starts once the snapshot is read (the permanent slot exists then), so every change it commits is after the snapshot.
      await waitFor(
        'the slot, once the snapshot is read',
        async () => (await server.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'cdc_slot'")).length > 0,
        30_000,
      );
      writing = writer.write(server.connectionString, 400, 80);
      const kills: string[] = [];
      for (let round = 0; round < 3; round++) {
        if (round === 1) {
          // Killed between "checkpoint complete" and the source's LSN acknowledgement (a few checkpoints in).
          await waitFor('a checkpoint of this run', () => lastCheckpoint(run) > 0, 30_000);
          const at = lastCheckpoint(run) + 3;
          run.child.kill('SIGKILL');
          await run.exit;
          run = startJobProcess(jobModule, config, { ...env, WEIR_TEST_POSTGRES_SOURCE_FAULT: `before-ack:${at}` });
          const exit = await run.exit;
          assert.equal(exit.signal, 'SIGKILL', run.stderr);
          assert.match(run.stderr, /killing the process after checkpoint \d+ completed, before LSN \S+ is confirmed/);
          kills.push(`before-ack:${at}`);
        } else {
          await waitFor('a checkpoint of this run', () => lastCheckpoint(run) > 0, 30_000);
          await sleep(300 + Math.floor(random() * 1200));
          run.child.kill('SIGKILL');
          assert.equal((await run.exit).signal, 'SIGKILL', run.stderr);
          kills.push(`after checkpoint ${lastCheckpoint(run)}`);
        }
        run = startJobProcess(jobModule, config, env);
      }
      await writing;
      const total = writer.changeCount;
      const deadline = Date.now() + settleMs;
      while (Date.now() < deadline) {
        const [row] = await server.query<{ rows: string }>('SELECT count(*) AS rows FROM cdc_log');
        if (Number(row?.rows) >= total) break;
        await sleep(100);
      }
      await waitFor('the last run restored from a checkpoint', () => /starting job "postgres-cdc" from checkpoint \d+/.test(run.stderr), 30_000);
      await sleep(1000); // anything beyond the total (a duplicate) would show now
      const audit = await auditCdc(server, writer.expected);
      run.child.kill('SIGTERM');
      await run.exit;
      return { audit, total, kills };
    } finally {
      run.child.kill('SIGKILL');
      await writing?.catch(() => {});
    }
  }

  test('SIGKILLs at random points and between checkpoint complete and the LSN acknowledgement: every committed change once, in order per key; the mirror equals the table', async () => {
    const { audit, total, kills } = await scenario(36, {}, 30_000);
    process.stderr.write(`acknowledged at checkpoint complete, kills ${kills.join(', ')}: ${total} changes committed\n`);
    assert.deepEqual(audit, { rows: total, wrongKeys: [], duplicates: 0, missing: 0, wrongMirror: [] }, `kills: ${kills.join(', ')}`);
  });

  test('the bug it guards against: the LSN acknowledged at emission instead of at checkpoint complete loses the changes no checkpoint holds', async () => {
    const { audit, total, kills } = await scenario(37, { WEIR_TEST_POSTGRES_SOURCE_ACK: 'at-emission' }, 5_000);
    process.stderr.write(`acknowledged at emission, kills ${kills.join(', ')}: ${JSON.stringify({ ...audit, wrongKeys: audit.wrongKeys.slice(0, 3) })}\n`);
    assert.ok(audit.missing > 0, `changes lost (${audit.missing} of ${total}): ${audit.wrongKeys.slice(0, 3).join('; ')}`);
  });
});
