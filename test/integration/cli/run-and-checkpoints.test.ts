/** `weir run` and `weir checkpoints list|show` as a user runs them, errors included. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { auditKeyedSum } from '../../harness/keyed-sum-audit.ts';

const root = repositoryRoot;
const job = join(root, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('weir run runs a job with options over its config; weir checkpoints lists and shows its checkpoints', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-cli-run-'));
  folders.push(folder);
  const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '6000', KS_RATE: '6000' };
  const storage = join(folder, 'checkpoints');
  const result = await weir(
    [
      'run',
      job,
      '--parallelism',
      '2',
      '--workers',
      '2',
      '--checkpoint-interval',
      '100ms',
      '--checkpoint-storage',
      storage,
      '--retained-checkpoints',
      '3',
      '--ui-port',
      '0',
      '--log-level',
      'debug',
      '--log-format',
      'json',
    ],
    env,
  );
  assert.equal(result.code, 0, result.stderr);
  // --log-format json: every stderr line is an object with a level, a time and a message; at debug, one per checkpoint.
  const lines = result.stderr
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: number; time: number; msg: string });
  assert.ok(
    lines.every((line) => typeof line.level === 'number' && typeof line.time === 'number' && typeof line.msg === 'string'),
    result.stderr,
  );
  assert.ok(
    lines.some((line) => line.level === 20 && /^checkpoint \d+ completed in \d+ ms/.test(line.msg)),
    result.stderr,
  );
  // At info, the summary (once a minute, and when the job ends).
  assert.ok(
    lines.some((line) => line.level === 30 && /^checkpoints: \d+ completed, \d+ aborted since the last summary; latest \d+/.test(line.msg)),
    result.stderr,
  );
  assert.match(result.stdout, /^job "keyed-sum" finished in [\d.]+s: \d+ checkpoints, 0 restarts, last checkpoint \d+$/m);
  assert.match(result.stderr, /checkpoint \d+ completed in \d+ ms/);
  assert.deepEqual(auditKeyedSum(join(folder, 'out'), 6000), { records: 6000, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });

  const list = await weir(['checkpoints', 'list', storage]);
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trim().split('\n').slice(1);
  assert.ok(rows.length >= 1 && rows.length <= 3, list.stdout);
  assert.ok(rows.every((row) => /^\d+\tcheckpoint\tcompleted\t/.test(row)));
  const latest = rows.at(-1)?.split('\t').at(-1) as string;

  const show = await weir(['checkpoints', 'show', latest]);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /^checkpoint \d+ of job "keyed-sum" \(metadata version 1\)$/m);
  assert.match(show.stdout, /running-sum \(process\): parallelism 2, 2 state files/);

  // Run again: it resumes from the latest checkpoint (the job had ended, so it ends at once), exact output.
  const again = await weir(
    ['run', job, '--parallelism', '2', '--workers', '2', '--checkpoint-interval', '100ms', '--checkpoint-storage', storage, '--no-ui'],
    env,
  );
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /starting job "keyed-sum" from checkpoint \d+/);
  // At info (the default), pretty lines with a time and a level, and no line per checkpoint.
  assert.match(again.stderr, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: starting job/m);
  assert.doesNotMatch(again.stderr, /checkpoint \d+ completed in/);
  assert.deepEqual(auditKeyedSum(join(folder, 'out'), 6000), { records: 6000, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
});

test('errors: a module without a job, a bad option value, no checkpoint folder, an exactly-once sink without checkpointing', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-cli-run-'));
  folders.push(folder);
  const notAJob = await weir(['run', join(root, 'package.json')]);
  assert.equal(notAJob.code, 1);
  assert.match(notAJob.stderr, /^weir: cannot load the job module .*package\.json/m);

  const badValue = await weir(['run', job, '--checkpoint-interval', 'often']);
  assert.equal(badValue.code, 1);
  assert.match(badValue.stderr, /--checkpoint-interval <duration>' argument 'often' is invalid/);

  const missing = await weir(['checkpoints', 'list', join(folder, 'nope')]);
  assert.equal(missing.code, 1);
  assert.match(
    missing.stderr,
    /^weir: .*nope does not exist\nhint: give the job's checkpointing\.storage \(what `weir run` was given as --checkpoint-storage/m,
  );

  const noCheckpointing = await weir(['run', job], { KS_OUTPUT: join(folder, 'out') });
  assert.equal(noCheckpointing.code, 1);
  assert.match(
    noCheckpointing.stderr,
    /^weir: sink "file sink" is exactly-once, but checkpointing is off: it would never commit its output\nhint: set checkpointing/m,
  );
});
