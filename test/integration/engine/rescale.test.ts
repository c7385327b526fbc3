/**
 * Rescaling through savepoints: stop with a savepoint at parallelism 2; resume it at 1 (into a copy
 * of the output) and run to the end; resume it again at 3, stop with another savepoint, resume that
 * at 1. Keyed state moves by key groups, the source's splits and the sink's committables are
 * redistributed; the output stays exact in both branches.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { auditKeyedSum, readCommittedRecords } from '../../harness/keyed-sum-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('stop with a savepoint at parallelism 2, resume it at 1, and at 3 then (another savepoint) at 1: exact results', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-rescale-'));
  folders.push(folder);
  const count = 24_000;
  process.env.KS_OUTPUT = join(folder, 'out');
  process.env.KS_COUNT = String(count);
  process.env.KS_RATE = '12000';
  const config = (parallelism: number) => ({
    parallelism,
    workers: 2,
    checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') },
  });

  const first = await startJob({ job: jobModule, config: config(2) });
  // Stop once some output is committed (a fixed sleep is too short on a loaded machine).
  while (!existsSync(join(folder, 'out')) || readCommittedRecords(join(folder, 'out')).length === 0) await sleep(50);
  const savepoint1 = await first.stopWithSavepoint();
  await first.result;
  assert.equal(savepoint1.kind, 'savepoint');
  const afterFirst = readCommittedRecords(join(folder, 'out')).length;
  assert.ok(afterFirst > 0 && afterFirst < count, `the first run stopped midway (${afterFirst} records)`);

  // Branch: the same savepoint resumed straight at parallelism 1, into a copy of the output as it was.
  await cp(join(folder, 'out'), join(folder, 'out-at-1'), { recursive: true });
  process.env.KS_OUTPUT = join(folder, 'out-at-1');
  const direct = await startJob({ job: jobModule, config: config(1), fromSavepoint: savepoint1.location.path });
  await direct.result;
  assert.deepEqual(auditKeyedSum(join(folder, 'out-at-1'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
  process.env.KS_OUTPUT = join(folder, 'out');

  const second = await startJob({ job: jobModule, config: config(3), fromSavepoint: savepoint1.location.path });
  while (readCommittedRecords(join(folder, 'out')).length <= afterFirst) await sleep(50);
  const savepoint2 = await second.stopWithSavepoint();
  await second.result;
  assert.ok(readCommittedRecords(join(folder, 'out')).length > afterFirst, 'the run at parallelism 3 made progress');

  const third = await startJob({ job: jobModule, config: config(1), fromSavepoint: savepoint2.location.path });
  await third.result;
  assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
});
