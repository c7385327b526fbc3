/**
 * The PostgreSQL sink's at-least-once mode (issue 36 point 4) against a real PostgreSQL whose
 * max_prepared_transactions is 0 (PostgreSQL's default: no PREPARE TRANSACTION): the keyed-sum job
 * with both sinks at-least-once runs (its preflight warns about the append sink only), is SIGKILLed
 * right after every task committed at a checkpoint's barrier but before the checkpoint completed,
 * and at random moments; the last run finishes. The upsert table ends exact (every key at its last
 * value); the append table misses nothing and holds the rows written again as duplicates, which is
 * what the preflight's warning says.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_KEYED_SUM_TABLES } from '../../fixtures/jobs/postgres-keyed-sum-job.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { auditPostgresKeyedSum } from '../../harness/postgres-keyed-sum-audit.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');

describe('postgresSink at-least-once on a server without prepared transactions', () => {
  let server: PostgresTestServer;
  let folder: string;
  before(async () => {
    server = await startPostgres({ maxPreparedTransactions: 0 });
    for (const statement of POSTGRES_KEYED_SUM_TABLES) await server.query(statement);
    folder = await mkdtemp(join(tmpdir(), 'weir-pg-alo-'));
  });
  after(async () => {
    await server?.stop();
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });

  test('SIGKILL after the barrier commits of a checkpoint that never completed, then at random moments: upserts exact, appends complete with duplicates', async () => {
    const [setting] = await server.query<{ max_prepared_transactions: string }>('SHOW max_prepared_transactions');
    assert.equal(setting?.max_prepared_transactions, '0');
    const count = 30_000;
    const env = { PGS_URL: server.connectionString, PGS_COUNT: String(count), PGS_RATE: '15000', PGS_GUARANTEE: 'at-least-once' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };

    // Every task acknowledged checkpoint >= 4 (so every sink committed at its barrier); its metadata is never written.
    const first = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'checkpoint-acknowledged:>=4' });
    assert.equal((await first.exit).signal, 'SIGKILL', first.stderr);
    assert.match(first.stderr, /postgres sink "events" is at-least-once in mode 'append': after a failure .* can hold duplicates/);
    assert.doesNotMatch(first.stderr, /postgres sink "totals" is at-least-once/, 'no warning for upserts');
    assert.doesNotMatch(first.stderr, /max_prepared_transactions is 0/, 'at-least-once does not need prepared transactions');

    for (const delay of [300 + Math.floor(Math.random() * 700), 300 + Math.floor(Math.random() * 700)]) {
      const run = startJobProcess(jobModule, config, env);
      await sleep(delay);
      run.child.kill('SIGKILL');
      await run.exit;
    }
    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "postgres-keyed-sum" from checkpoint \d+/);

    const audit = await auditPostgresKeyedSum(server, count);
    // The upsert table: every key at its total, written by its last record.
    assert.deepEqual(audit.wrongTotals, []);
    // The append table: no row lost; the rows committed at the barrier of the checkpoint that never
    // completed were written again (the running sums of those duplicates may differ: the replay
    // interleaves the two source subtasks anew, so wrongSums is not audited here).
    assert.equal(audit.missing, 0);
    assert.ok(audit.duplicates > 0, `append at-least-once duplicated rows after the failure: ${JSON.stringify({ ...audit, wrongTotals: undefined })}`);
  });
});
