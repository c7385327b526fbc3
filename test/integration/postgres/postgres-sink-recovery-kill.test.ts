/**
 * The PostgreSQL sink's recovery killed half way (issue 36 point 6), against a real PostgreSQL: a
 * first run of the keyed-sum job is SIGKILLed so that prepared transactions are left (those of a
 * completed checkpoint, for the restore to commit, or of a checkpoint that never completed, for it
 * to roll back); the second run is SIGKILLed right after its recovery's first COMMIT PREPARED or
 * ROLLBACK PREPARED (held there by WEIR_TEST_POSTGRES_DELAY); the third run recovers again (a
 * repeat commit of a transaction already committed is recognized by its transaction id) and
 * finishes. And a transaction carried past its barrier (the barrier overtook the previous
 * checkpoint's completion) killed before it was prepared, its checkpoint complete: the restore
 * writes the rows the checkpoint carries again. The tables, read back: every input exactly once,
 * upserts at their last values, nothing prepared.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditPostgresKeyedSum } from '../../harness/postgres-keyed-sum-audit.ts';
import { postgresSumTest } from '../../harness/postgres-sum-test.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-keyed-sum-job.ts');

describe('postgresSink: SIGKILL of the job during its recovery', () => {
  const pg = postgresSumTest('rk');
  const { freshTables, prepared } = pg;

  const cases = [
    {
      name: 'killed between "checkpoint complete" and COMMIT PREPARED, then killed again right after the recovery committed one of them',
      fault: 'after-checkpoint-metadata:>=4',
      step: 'recovery-commit',
      held: /holding after COMMIT PREPARED (\S+)/,
    },
    {
      name: 'killed once every task prepared a checkpoint that never completed, then killed again right after the recovery rolled one of them back',
      fault: 'checkpoint-acknowledged:>=4',
      step: 'recovery-rollback',
      held: /holding after ROLLBACK PREPARED (\S+)/,
    },
  ];
  test('a carried transaction its run never prepared (SIGKILL once its checkpoint completed, while it still waited for the previous commit): the restore writes its rows again; tables exact', async () => {
    const folder = await freshTables();
    // 3 s of input: time for a barrier to overtake a completion however loaded the machine.
    const count = 12_000;
    const env = { PGS_URL: pg.server.connectionString, PGS_COUNT: String(count), PGS_RATE: '4000' };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'none' },
    };
    // Checkpoints slower than their interval: barriers overtake completions, so transactions are
    // carried; the first carried one is held before its rows go in, until the kill.
    const first = startJobProcess(jobModule, config, {
      ...env,
      WEIR_TEST_STORAGE_DELAY: 'metadata:>=1:300',
      WEIR_TEST_POSTGRES_DELAY: 'carried-prepare:20000',
    });
    const holding = /holding before PREPARE TRANSACTION (\S+-(\d+)-o[0-9a-z]+) \(carried\)/;
    await waitFor('a carried transaction held before its PREPARE', () => holding.test(first.stderr) || first.child.exitCode !== null, 60_000);
    assert.match(first.stderr, holding, `the run ended before a transaction was carried:\n${first.stderr}`);
    const [, gid, checkpoint] = holding.exec(first.stderr) as RegExpExecArray;
    await waitFor(`checkpoint ${checkpoint} completed`, () => first.stdout.includes(`checkpoint ${checkpoint}\n`), 30_000);
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL');
    assert.ok(!(await prepared()).includes(gid as string), `${gid} was never prepared`);

    // A second run restores that checkpoint: its rows are kept to be written into the run's first
    // transaction. It runs, no checkpoint of its own completes (their metadata held back), and it is
    // SIGKILLed: the restored checkpoint must not have been recorded as committed meanwhile, or the
    // next start would commit nothing of it again, and its rows would be lost.
    const second = startJobProcess(jobModule, config, { ...env, WEIR_TEST_STORAGE_DELAY: 'metadata:>=1:60000' });
    const again = /its \d+ rows, kept in the checkpoint, are written again/;
    await waitFor('the second run restored the carried rows', () => again.test(second.stderr) || second.child.exitCode !== null, 60_000);
    assert.match(second.stderr, again, second.stderr);
    await new Promise((resolve) => setTimeout(resolve, 3000)); // running: a record of the restored checkpoint would be written by now
    second.child.kill('SIGKILL');
    assert.equal((await second.exit).signal, 'SIGKILL');
    assert.ok(!existsSync(join(folder, 'checkpoints', `chk-${checkpoint}`, '_committed')), `checkpoint ${checkpoint} is not recorded as committed`);

    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, new RegExp(`starting job "postgres-keyed-sum" from checkpoint ${checkpoint}`));
    assert.match(
      last.stderr,
      new RegExp(`transaction ${gid} was never prepared \\(its run ended first\\): its \\d+ rows, kept in the checkpoint, are written again`),
    );
    assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
    assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
  });

  for (const { name, fault, step, held } of cases) {
    test(`${name}: the next run recovers again and finishes; tables exact, nothing prepared`, async () => {
      const folder = await freshTables();
      const count = 20_000;
      const env = { PGS_URL: pg.server.connectionString, PGS_COUNT: String(count), PGS_RATE: '10000' };
      const config = {
        parallelism: 2,
        workers: 2,
        checkpointing: { interval: '100ms', mode: 'exactly-once', storage: join(folder, 'checkpoints') },
        restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
      };

      const first = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: fault });
      assert.equal((await first.exit).signal, 'SIGKILL', first.stderr);
      const left = await prepared();
      assert.ok(left.length >= 2, `prepared transactions left by the first run: ${left.join(', ')}`);

      const second = startJobProcess(jobModule, config, { ...env, WEIR_TEST_POSTGRES_DELAY: `${step}:10000` });
      await waitFor(`the second run's recovery held after ${step}`, () => held.test(second.stderr), 30_000);
      second.child.kill('SIGKILL');
      assert.equal((await second.exit).signal, 'SIGKILL');
      const ended = held.exec(second.stderr)?.[1];
      assert.ok(ended !== undefined && left.includes(ended), `${ended} was one of ${left.join(', ')}`);
      assert.ok(!(await prepared()).includes(ended), `${ended} was ended before the kill`);

      const last = startJobProcess(jobModule, config, env);
      const exit = await last.exit;
      assert.equal(exit.code, 0, last.stderr);
      assert.match(last.stderr, /starting job "postgres-keyed-sum" from checkpoint \d+/);
      assert.deepEqual(await auditPostgresKeyedSum(pg.server, count), { rows: count, duplicates: 0, missing: 0, wrongSums: 0, wrongTotals: [] });
      assert.deepEqual(await prepared(), [], 'nothing stays prepared after the job finished');
    });
  }
});
