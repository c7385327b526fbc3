/**
 * Issue 34 point 6: the process SIGKILLed while a task's state file is being written (the
 * checkpoint's asynchronous part) and while a restore reads one, for both state backends with
 * incremental checkpoints: generator -> keyBy -> keyed running sum over 5,000 keys -> file sink
 * (two-phase commit), checkpoints every 100 ms. A storage operation is held
 * (WEIR_TEST_STORAGE_DELAY `state` / `restore`) and the process killed while it waits; then the job
 * runs to its end. The committed output holds every record exactly once with exact running sums
 * (test/harness/keyed-sum-audit.ts), and every file a completed checkpoint names is there.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { assertChainsIntact } from '../../harness/checkpoint-chains.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditKeyedSum } from '../../harness/keyed-sum-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const exact = (count: number) => ({ records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });

describe('SIGKILL during state file writes and restores', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });

  const count = 30_000;
  /** A folder of its own for a run of the keyed-sum job on `backend`, its environment, and its config (incremental checkpoints every 100 ms, and `checkpointing`). */
  const jobIn = async (backend: 'heap' | 'disk', checkpointing: { incrementalMaxChanges?: number } = {}) => {
    const folder = await mkdtemp(join(tmpdir(), `weir-state-io-${backend}-`));
    folders.push(folder);
    const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: String(count), KS_RATE: '15000', KS_KEYS: '5000' };
    const config = {
      parallelism: 2,
      workers: 2,
      stateBackend: backend,
      stateDir: join(folder, 'state'),
      checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints'), incremental: true, retained: 2, ...checkpointing },
      restartStrategy: { type: 'fixed-delay' as const, attempts: 3, delay: 100 },
    };
    return { folder, env, config };
  };

  for (const backend of ['heap', 'disk'] as const) {
    test(`${backend} backend: killed while a checkpoint writes a state file, then while a restore reads one: output exact, chains intact`, async () => {
      const { folder, env, config } = await jobIn(backend);
      for (const [delay, line] of [
        // Checkpoint 6's files: some tasks' written, one held; the process dies with it pending.
        ['state:>=6:3000', /holding state of checkpoint \d+ \(a streamed keyed state file, its first pieces written\)/],
        // The restart's restore: a task holds its read of the checkpoint it restores, and dies.
        ['restore:>=1:3000', /holding restore of checkpoint \d+/],
      ] as const) {
        const run = startJobProcess(jobModule, config, { ...env, WEIR_TEST_STORAGE_DELAY: delay });
        await waitFor(`the job holding ${delay}`, () => line.test(run.stderr), 60_000);
        run.child.kill('SIGKILL');
        await run.exit;
        assertChainsIntact(folder);
        if (delay.startsWith('state')) {
          // The keyed state file is streamed: the kill came with one begun (its first pieces written, not finished), in a checkpoint without _metadata.
          const partial = readdirSync(join(folder, 'checkpoints'))
            .filter((name) => name.startsWith('chk-') && !existsSync(join(folder, 'checkpoints', name, '_metadata')))
            .flatMap((name) => readdirSync(join(folder, 'checkpoints', name)).map((file) => join(folder, 'checkpoints', name, file)))
            .filter((file) => file.endsWith('.keyed') && statSync(file).size > 0);
          assert.ok(partial.length > 0, 'a keyed state file begun, not finished, when the process was killed');
        }
      }
      const last = startJobProcess(jobModule, config, env);
      const exit = await last.exit;
      assert.equal(exit.code, 0, last.stderr);
      assert.match(last.stderr, /starting job "[^"]+" from checkpoint \d+/);
      assertChainsIntact(folder);
      assert.deepEqual(auditKeyedSum(join(folder, 'out'), count, 5000), exact(count));
    });
  }

  test('disk backend: killed while a base is written beside the chain, after later checkpoints completed meanwhile: output exact, chains intact', async () => {
    const { folder, env, config } = await jobIn('disk', { incrementalMaxChanges: 2 });
    const run = startJobProcess(jobModule, config, { ...env, WEIR_TEST_STORAGE_DELAY: 'base:>=1:30000' });
    await waitFor('a base held beside the chain', () => /holding base of checkpoint \d+/.test(run.stderr), 60_000);
    const held = Number(/holding base of checkpoint (\d+)/.exec(run.stderr)?.[1]);
    // Checkpoints go on completing while the base is written.
    const completedAfter = () =>
      readdirSync(join(folder, 'checkpoints')).filter((name) => {
        const id = Number(/^chk-(\d+)$/.exec(name)?.[1]);
        return id > held + 2 && existsSync(join(folder, 'checkpoints', name, '_metadata'));
      });
    await waitFor(`checkpoints after ${held} completed while its base is held`, () => completedAfter().length > 0, 60_000);
    run.child.kill('SIGKILL');
    await run.exit;
    assertChainsIntact(folder);
    const partial = readdirSync(join(folder, 'checkpoints', `chk-${held}`)).filter((file) => file.endsWith('.keyed-base'));
    assert.ok(partial.length > 0, `a base begun in checkpoint ${held}'s folder, not finished, when the process was killed`);
    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assertChainsIntact(folder);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count, 5000), exact(count));
  });
});
