/** Bad jobs and bad restores get one clear error naming the setting or thing, and the fix. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('a module that does not export a job', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bad-'));
  folders.push(folder);
  const file = join(folder, 'not-a-job.mjs');
  await writeFile(file, 'export default { name: "x" };\n');
  await assert.rejects(runJob({ job: file }), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'NOT_A_JOB');
    assert.match(error.message, /does not export a job/);
    assert.match(error.hint ?? '', /defineJob/);
    return true;
  });
});

test('an exactly-once sink without checkpointing is refused before anything runs', async () => {
  await assert.rejects(runJob({ job: jobModule, config: {} }), /sink "file sink" is exactly-once, but checkpointing is off/);
});

test('a checkpoint holding state of an operator uid the job lacks', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bad-'));
  folders.push(folder);
  process.env.KS_OUTPUT = join(folder, 'out');
  process.env.KS_COUNT = '2000';
  delete process.env.KS_RATE;
  const config = { parallelism: 1, workers: 1, checkpointing: { interval: '50ms', storage: join(folder, 'checkpoints') } };
  await runJob({ job: jobModule, config });
  process.env.KS_SUM_UID = 'renamed-sum';
  try {
    await assert.rejects(runJob({ job: jobModule, config }), (error: unknown) => {
      assert.ok(error instanceof WeirError);
      assert.equal(error.code, 'UNKNOWN_OPERATOR_STATE');
      assert.match(error.message, /holds state of operator uid "running-sum"/);
      assert.match(error.hint ?? '', /same uid again, or start with --fresh/);
      return true;
    });
  } finally {
    delete process.env.KS_SUM_UID;
  }
});

test('maxParallelism changed since the checkpoint', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bad-'));
  folders.push(folder);
  process.env.KS_OUTPUT = join(folder, 'out');
  process.env.KS_COUNT = '1000';
  const config = { parallelism: 1, workers: 1, checkpointing: { interval: '50ms', storage: join(folder, 'checkpoints') } };
  await runJob({ job: jobModule, config });
  await assert.rejects(runJob({ job: jobModule, config: { ...config, maxParallelism: 64 } }), /taken with maxParallelism 128, the job now has 64/);
});

test('a corrupt or future-version latest checkpoint stops the restore with the folder to delete', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bad-'));
  folders.push(folder);
  process.env.KS_OUTPUT = join(folder, 'out');
  process.env.KS_COUNT = '1000';
  const storage = join(folder, 'checkpoints');
  const config = { parallelism: 1, workers: 1, checkpointing: { interval: '50ms', storage } };
  await runJob({ job: jobModule, config });
  const latest = (await readdir(storage)).filter((name) => name.startsWith('chk-')).sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  const metadataFile = join(storage, latest.at(-1) as string, '_metadata');
  const metadata = JSON.parse(await readFile(metadataFile, 'utf8')) as Record<string, unknown>;

  await writeFile(metadataFile, JSON.stringify({ ...metadata, version: 7 }));
  await assert.rejects(runJob({ job: jobModule, config }), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.match(error.message, /the latest checkpoint cannot be restored: .*metadata version 7, newer than this Weir reads \(2\)/);
    assert.match(error.hint ?? '', /newer Weir/);
    return true;
  });

  await writeFile(metadataFile, '{"version": 1, "kind": "checkp');
  await assert.rejects(runJob({ job: jobModule, config }), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.match(error.message, /the latest checkpoint cannot be restored: .*corrupt/);
    assert.match(error.hint ?? '', new RegExp(`delete .*${latest.at(-1)}`));
    return true;
  });
});
