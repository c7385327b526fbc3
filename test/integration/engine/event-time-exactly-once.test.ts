/**
 * Exactly-once with event time: a windowed count job and an interval join, the whole process
 * SIGKILLed at random moments and restarted from its checkpoints, give exactly the results of an
 * uninterrupted run: window contents, pending event-time timers and join buffers are in the
 * checkpoints; watermarks start again after each restore and fire the restored timers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { expectedPairs, type JoinedPair } from '../../fixtures/jobs/interval-join-job.ts';
import { expectedWindowCounts, type WindowCount } from '../../fixtures/jobs/windowed-count-job.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { canonical, readCommitted } from './window-output.ts';

const jobs = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});
const newFolder = async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-et-eo-'));
  folders.push(folder);
  return folder;
};
const configFor = (folder: string) => ({
  parallelism: 2,
  workers: 2,
  checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') },
  restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
});

/** Runs the job once without failures, then again (in another folder) killed with SIGKILL 4 times at random moments; returns both outputs. */
async function uninterruptedAndKilled(job: string, env: (folder: string) => Record<string, string>, outputOf: (folder: string) => string) {
  const clean = await newFolder();
  const run = startJobProcess(join(jobs, job), configFor(clean), env(clean));
  const exit = await run.exit;
  assert.equal(exit.code, 0, run.stderr);

  const folder = await newFolder();
  // First a crash right after a checkpoint's metadata is durable, before any sink was told to commit.
  const faulted = startJobProcess(join(jobs, job), configFor(folder), { ...env(folder), WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
  const faultExit = await faulted.exit;
  assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
  let kills = 1;
  // Then SIGKILLs at random moments, each once the run has completed a checkpoint of its own (so it made progress).
  for (let round = 0; round < 4; round++) {
    const killed = startJobProcess(join(jobs, job), configFor(folder), env(folder));
    const exited = killed.exit.then(() => true);
    while (!/^checkpoint \d+$/m.test(killed.stdout) && !(await Promise.race([exited, sleep(20).then(() => false)]))) {}
    await sleep(Math.floor(Math.random() * 800));
    killed.child.kill('SIGKILL');
    if ((await killed.exit).signal === 'SIGKILL') kills++;
  }
  assert.ok(kills >= 4, `killed ${kills} times`);
  const last = startJobProcess(join(jobs, job), configFor(folder), env(folder));
  const lastExit = await last.exit;
  assert.equal(lastExit.code, 0, last.stderr);
  assert.match(last.stderr, /from checkpoint \d+/, 'the last run resumed from a checkpoint');
  return { uninterrupted: readCommitted<unknown>(outputOf(clean)), killed: readCommitted<unknown>(outputOf(folder)) };
}

describe('exactly-once with event time, under SIGKILL', () => {
  test('tumbling event-time window counts: the killed and restarted run equals the uninterrupted one (and the expected counts)', async () => {
    const count = 24_000;
    const { uninterrupted, killed } = await uninterruptedAndKilled(
      'windowed-count-job.ts',
      (folder) => ({ WC_OUTPUT: join(folder, 'out'), WC_COUNT: String(count), WC_RATE: '4000' }),
      (folder) => join(folder, 'out'),
    );
    const expected = canonical(expectedWindowCounts(count, 1000));
    assert.deepEqual(canonical(uninterrupted as WindowCount[]), expected, 'the uninterrupted run');
    assert.deepEqual(canonical(killed as WindowCount[]), expected, 'the killed run: no window lost, none twice, every count exact');
  });

  test('interval join: the killed and restarted run finds exactly the pairs of the uninterrupted one', async () => {
    const count = 12_000;
    const { uninterrupted, killed } = await uninterruptedAndKilled(
      'interval-join-job.ts',
      (folder) => ({ IJ_OUTPUT: join(folder, 'out'), IJ_COUNT: String(count), IJ_RATE: '2500' }),
      (folder) => join(folder, 'out'),
    );
    const expected = canonical(expectedPairs(count));
    assert.ok(expected.length > count / 2, `a join with many pairs (${expected.length})`);
    assert.deepEqual(canonical(uninterrupted as JoinedPair[]), expected, 'the uninterrupted run');
    assert.deepEqual(canonical(killed as JoinedPair[]), expected, 'the killed run: every pair exactly once');
  });
});
