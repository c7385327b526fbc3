/**
 * The disk state backend (stateBackend: 'disk', lmdb) in a real job: generator -> map -> keyBy ->
 * keyed running sum -> file sink, checkpoints every 100 ms, the whole process SIGKILLed at random
 * moments; and checkpoints that move the job between the heap and the disk backend at other
 * parallelisms (the canonical snapshot format). The committed output must hold every record
 * exactly once with exact running sums (test/harness/keyed-sum-audit.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { auditKeyedSum, readCommittedRecords } from '../../harness/keyed-sum-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const startRun = (folder: string, env: Record<string, string>, config: object) =>
  startJobProcess(jobModule, config, { KS_OUTPUT: join(folder, 'out'), ...env });

const configFor = (folder: string, stateBackend: 'heap' | 'disk', parallelism: number) => ({
  parallelism,
  workers: 2,
  stateBackend,
  stateDir: join(folder, 'state'),
  checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') },
  restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
});

/** Whether the running sum's subtask `subtask` has its lmdb file (in `<stateDir>/<job>/<operator uid>/<subtask>/<instance>/`). */
const hasLmdb = (folder: string, subtask: number) =>
  filesUnder(join(folder, 'state', 'keyed-sum', 'running-sum', String(subtask))).some((file) => file.endsWith('data.mdb'));

/** Every file left under `dir`. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

const exact = (count: number) => ({ records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });

describe('the disk state backend under failures', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const newFolder = async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-disk-state-'));
    folders.push(folder);
    return folder;
  };

  test('SIGKILL of the whole process at random moments, and between "checkpoint complete" and the commit: output exact; the working folders are gone after the end', async () => {
    const folder = await newFolder();
    const count = 30_000;
    const env = { KS_COUNT: String(count), KS_RATE: '15000' };
    const config = configFor(folder, 'disk', 2);
    let kills = 0;
    const faulted = startRun(folder, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=4' }, config);
    // The keyed state is in lmdb, in the subtasks' working folders.
    await waitFor('the lmdb files of both running-sum subtasks', () => hasLmdb(folder, 0) && hasLmdb(folder, 1), 30_000);
    const faultExit = await faulted.exit;
    assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
    assert.match(faulted.stderr, /killing the process at after-checkpoint-metadata of checkpoint \d+/);
    kills++;
    for (let round = 0; round < 3; round++) {
      const run = startRun(folder, env, config);
      await sleep(400 + Math.floor(Math.random() * 900));
      run.child.kill('SIGKILL');
      const exit = await run.exit;
      if (exit.signal === 'SIGKILL') kills++;
    }
    assert.ok(kills >= 3, `killed ${kills} times`);
    const last = startRun(folder, env, config);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), exact(count));
    assert.deepEqual(filesUnder(join(folder, 'state')), [], 'each task deletes its working folder when it ends');
  });

  test('checkpoints move the job from the heap backend at parallelism 2 to the disk backend at 3, and back to the heap at 1: output exact', async () => {
    const folder = await newFolder();
    const count = 24_000;
    const env = { KS_COUNT: String(count), KS_RATE: '12000' };
    const out = join(folder, 'out');

    const onHeap = startRun(folder, env, configFor(folder, 'heap', 2));
    await waitFor('committed output of the heap run', () => existsSync(out) && readCommittedRecords(out).length > 0, 60_000);
    onHeap.child.kill('SIGKILL');
    await onHeap.exit;
    const afterHeap = readCommittedRecords(out).length;
    assert.ok(afterHeap < count, `the heap run stopped midway (${afterHeap} records)`);

    const onDisk = startRun(folder, env, configFor(folder, 'disk', 3));
    await waitFor('the lmdb file of the third running-sum subtask', () => hasLmdb(folder, 2), 30_000);
    await waitFor('more committed output from the disk run', () => readCommittedRecords(out).length > afterHeap, 60_000);
    onDisk.child.kill('SIGKILL');
    await onDisk.exit;
    assert.match(onDisk.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    assert.ok(readCommittedRecords(out).length < count, 'the disk run stopped midway');

    const backOnHeap = startRun(folder, env, configFor(folder, 'heap', 1));
    const exit = await backOnHeap.exit;
    assert.equal(exit.code, 0, backOnHeap.stderr);
    assert.match(backOnHeap.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    assert.deepEqual(auditKeyedSum(out, count), exact(count));
  });
});
