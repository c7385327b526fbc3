/**
 * The PostgreSQL sink against a real PostgreSQL (test/harness/postgres-pg.server.ts): generator ->
 * keyed running sum -> postgresSink append (sum_events) and upsert (sum_totals), parallelism 2
 * over two worker threads, checkpoints every 100 ms, under SIGKILLs of the job's process, one of
 * them between "checkpoint complete" (its metadata durable) and COMMIT PREPARED. The tables, read
 * back, must hold every input exactly once, upserts at their last values, and nothing may stay
 * prepared once the job has ended.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultGidPrefix, parseGid } from '../../../src/connectors/postgres/postgres-gid.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { auditPostgresKeyedSum } from '../../harness/postgres-keyed-sum-audit.ts';
import { postgresSumTest } from '../../harness/postgres-sum-test.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');
const configFor = (folder: string, restartStrategy: object = { type: 'fixed-delay', attempts: 3, delay: 100 }) => ({
  parallelism: 2,
  workers: 2,
  checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
  restartStrategy,
});

describe('postgresSink: exactly-once into a real PostgreSQL', () => {
  const pg = postgresSumTest('eo');
  const { freshTables, prepared } = pg;

  test('SIGKILL between "checkpoint complete" and COMMIT PREPARED, then at random moments: the restarts commit what the checkpoint holds, roll back the rest; tables exact', async () => {
    const folder = await freshTables();
    const count = 30_000;
    const env = { PGS_URL: pg.server.connectionString, PGS_COUNT: String(count), PGS_RATE: '15000' };
    const config = configFor(folder);

    // The crash right after checkpoint 4's metadata is durable, before any sink was told to commit.
    const faulted = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=4' });
    const faultExit = await faulted.exit;
    assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
    const killedAt = Number(/killing the process at after-checkpoint-metadata of checkpoint (\d+)/.exec(faulted.stderr)?.[1]);
    assert.ok(killedAt >= 4, faulted.stderr);
    // The completed checkpoint's transactions are prepared, not committed: both sinks, both subtasks.
    const left = await prepared();
    for (const sink of ['events', 'totals']) {
      for (const subtask of [0, 1]) {
        const prefix = defaultGidPrefix('postgres-keyed-sum', sink);
        const gids = left.filter((gid) => {
          const parts = parseGid(prefix, gid);
          return parts?.subtask === subtask && parts.checkpointId === killedAt && parts.run !== undefined;
        });
        assert.equal(gids.length, 1, `${prefix}-${subtask}-${killedAt}-o<run> prepared after the kill: ${left.join(', ')}`);
      }
    }

    let kills = 1;
    // The first kill early, while the restart recovers (commits what the checkpoint holds, rolls back the rest).
    for (const delay of [150, 400 + Math.floor(Math.random() * 800), 400 + Math.floor(Math.random() * 800)]) {
      const run = startJobProcess(jobModule, config, env);
      await sleep(delay);
      run.child.kill('SIGKILL');
      if ((await run.exit).signal === 'SIGKILL') kills++;
    }
    assert.ok(kills >= 3, `killed ${kills} times`);

    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "postgres-keyed-sum" from checkpoint \d+/);
    assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
    assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
  });

  test("barriers that overtake the previous checkpoint's completion (checkpoints slower than their interval; the final one triggered while one is still completing): their rows are carried in the checkpoint and written once that one committed; no failure, tables exact", async () => {
    const folder = await freshTables();
    const count = 4_000;
    // Every checkpoint's metadata write is held 300 ms (interval 100 ms): each next checkpoint is
    // triggered the moment one completes, its barrier racing that completion to the sinks, and the
    // input ends while one is completing, so the final checkpoint's barrier reaches the sinks before
    // that one's completion does. Before the carried transactions, the sink failed the task there.
    const env = { PGS_URL: pg.server.connectionString, PGS_COUNT: String(count), PGS_RATE: '4000', WEIR_TEST_STORAGE_DELAY: 'metadata:>=1:300' };
    const run = startJobProcess(jobModule, configFor(folder, { type: 'none' }), env);
    const exit = await run.exit;
    assert.equal(exit.code, 0, run.stderr);
    assert.match(run.stdout, /finished after 0 restarts/);
    assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
    assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
  });

  test('a job that fails for good right after a checkpoint completed: its end commits what that checkpoint holds and rolls back the rest; nothing stays prepared', async () => {
    const folder = await freshTables();
    const env = { PGS_URL: pg.server.connectionString, PGS_COUNT: '200000', PGS_RATE: '20000', WEIR_FAULT: 'after-checkpoint-metadata:5:fail' };
    const run = startJobProcess(jobModule, configFor(folder, { type: 'none' }), env);
    const exit = await run.exit;
    assert.equal(exit.code, 1, run.stderr);
    assert.match(run.stderr, /injected failure at after-checkpoint-metadata of checkpoint 5/);
    assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job failed');
    // Checkpoint 5 completed before any sink heard of it: the job's end committed its transactions.
    // What is there is a consistent prefix of the input: no duplicates, exact running sums.
    const audit = await auditPostgresKeyedSum(pg.server, 200_000);
    assert.ok(audit.rows > 0, 'the completed checkpoints were committed');
    assert.equal(audit.duplicates, 0);
    assert.equal(audit.wrongSums, 0);
    const [last] = await pg.server.query<{ seq: string }>('SELECT max(seq) AS seq FROM sum_events');
    assert.ok(Number(last?.seq) < 200_000 - 1, 'the job failed before its end');
  });
});
