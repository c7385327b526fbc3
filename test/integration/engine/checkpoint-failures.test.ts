/** Checkpoint timeouts and declines abort checkpoints; more in a row than tolerableFailures fail the job. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, test } from 'node:test';
import type { JobEvent } from '../../../src/runtime/jobmaster/job-master.ts';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'slow-snapshot-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});
beforeEach(() => {
  delete process.env.SLOW_MODE;
  process.env.SLOW_SNAPSHOTS = '2';
  process.env.SLOW_MS = '400';
});

async function run(tolerableFailures: number): Promise<{ events: JobEvent[]; error: unknown }> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-ckfail-'));
  folders.push(folder);
  const events: JobEvent[] = [];
  try {
    await runJob({
      job: jobModule,
      config: {
        parallelism: 1,
        workers: 1,
        checkpointing: { interval: '50ms', timeout: '150ms', tolerableFailures, storage: join(folder, 'checkpoints') },
        restartStrategy: { type: 'none' },
      },
      onEvent: (event) => events.push(event),
    });
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

test('a checkpoint slower than checkpointing.timeout is aborted; with tolerableFailures 0 the job fails and says why', async () => {
  const { events, error } = await run(0);
  assert.ok(events.some((event) => event.type === 'checkpoint-aborted'));
  assert.ok(error instanceof Error);
  assert.match(error.message, /1 checkpoints failed in a row, more than checkpointing\.tolerableFailures \(0\)/);
  assert.match(error.message, /did not complete within checkpointing\.timeout \(150 ms\)/);
});

test('tolerated timeouts: the aborted checkpoints are counted, later ones complete, the job finishes', async () => {
  // Two 400 ms snapshots against a 150 ms timeout abort about five checkpoints in a row, more on a
  // loaded machine (a CI run saw six): tolerate plenty, this test is about the job going on.
  const { events, error } = await run(20);
  assert.equal(error, undefined);
  const aborted = events.filter((event) => event.type === 'checkpoint-aborted').length;
  assert.ok(aborted >= 1, `aborted ${aborted}`);
  assert.ok(events.some((event) => event.type === 'checkpoint-completed'));
  assert.equal(events.at(-1)?.type, 'finished');
});

test('a declined checkpoint is aborted and counts as a failure', async () => {
  process.env.SLOW_MODE = 'decline';
  const { events, error } = await run(0);
  assert.ok(events.some((event) => event.type === 'checkpoint-aborted'));
  assert.ok(error instanceof Error);
  assert.match(error.message, /declined by .*slow sink.*: injected snapshot failure/);
});
