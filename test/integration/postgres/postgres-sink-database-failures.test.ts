/**
 * The PostgreSQL sink when the database fails under it (issue 36 point 6), against a real
 * PostgreSQL (test/harness/postgres-pg.server.ts): the keyed-sum job (generator -> keyed running sum ->
 * postgresSink append into sum_events and upsert into sum_totals, parallelism 2 over two worker
 * threads, checkpoints every 100 ms) writes while the server is stopped with a fast shutdown
 * (sessions ended, open transactions rolled back, prepared ones kept), an immediate shutdown (no
 * checkpoint: the next start replays the WAL) or a SIGKILL of the postmaster, and started again a
 * moment later. The job fails, restarts until the server is back, and finishes: the tables, read
 * back, hold every input exactly once, upserts at their last values, and nothing stays prepared.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditPostgresKeyedSum } from '../../harness/postgres-keyed-sum-audit.ts';
import { postgresSumTest } from '../../harness/postgres-sum-test.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');

describe('postgresSink: the database fails while the job writes', () => {
  const pg = postgresSumTest('db');
  const { freshTables, prepared } = pg;

  const cases: { name: string; stop: () => Promise<void> }[] = [
    { name: 'a fast shutdown (pg_ctl -m fast)', stop: () => pg.server.shutdown('fast') },
    { name: 'an immediate shutdown (pg_ctl -m immediate: WAL recovery at the next start)', stop: () => pg.server.shutdown('immediate') },
    { name: 'a SIGKILL of the postmaster', stop: () => pg.server.kill() },
  ];
  for (const { name, stop } of cases) {
    test(`${name} mid-transaction, the server back 1 s later: the job restarts until it reaches it; tables exact, nothing prepared`, async () => {
      const folder = await freshTables();
      const count = 30_000;
      const config = {
        parallelism: 2,
        workers: 2,
        checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
        // The server is away for about a second: every attempt in that time fails to connect.
        restartStrategy: { type: 'fixed-delay', attempts: 100, delay: 100 },
      };
      const run = startJobProcess(jobModule, config, { PGS_URL: pg.server.connectionString, PGS_COUNT: String(count), PGS_RATE: '10000' });
      // Mid-run: committed rows there, and the next checkpoint's transactions open or prepared.
      await waitFor(
        'rows committed by the job',
        async () => Number((await pg.server.query<{ n: string }>('SELECT count(*) AS n FROM sum_events'))[0]?.n) > 5_000,
        30_000,
      );
      await stop();
      await sleep(1_000);
      await pg.server.start();
      const exit = await run.exit;
      assert.equal(exit.code, 0, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /restarting/, 'the job failed when the server went away, and restarted');
      // The sink fails the task, or declines the checkpoint it was writing, which fails the job (tolerableFailures 0): either way a restart.
      assert.match(
        run.stderr,
        /job failed: (.*declined by postgres sink .*: )?postgres sink "(events|totals)" \(subtask \d\): /,
        'a sink failed on the lost server',
      );
      assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
      assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
    });
  }

  test('a fast shutdown and restart of the server while the job is paused between "checkpoint complete" and COMMIT PREPARED: the prepared transactions survive it, the commit on the lost connection fails the job, the restart commits them; tables exact', async () => {
    const folder = await freshTables();
    const count = 20_000;
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 10, delay: 100 },
    };
    const run = startJobProcess(jobModule, config, {
      PGS_URL: pg.server.connectionString,
      PGS_COUNT: String(count),
      PGS_RATE: '10000',
      WEIR_FAULT: 'after-checkpoint-metadata:>=4:stop',
    });
    await waitFor('the job paused after a checkpoint completed', () => /pausing the process at after-checkpoint-metadata/.test(run.stderr), 30_000);
    const checkpoint = Number(/pausing the process at after-checkpoint-metadata of checkpoint (\d+)/.exec(run.stderr)?.[1]);
    const before = await prepared();
    assert.equal(
      before.filter((gid) => new RegExp(`-${checkpoint}-o[0-9a-z]+$`).test(gid)).length,
      4,
      `checkpoint ${checkpoint} prepared by 2 sinks x 2 subtasks: ${before.join(', ')}`,
    );
    await pg.server.shutdown('fast');
    await pg.server.start();
    assert.deepEqual(await prepared(), before, 'prepared transactions survive a restart of the server');
    run.child.kill('SIGCONT');
    const exit = await run.exit;
    assert.equal(exit.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /restarting/, 'the job failed on its lost connections, and restarted');
    assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
    assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
  });
});
