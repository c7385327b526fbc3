/**
 * Errors of the job's own code keep where they happened: a function that throws in a worker
 * thread names the job file and line in what `weir run` prints, and a job file with a syntax
 * error names its line and column.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { repositoryRoot, weir } from '../../harness/cli.ts';

const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('a map that throws: weir run prints the job file and the line of the throw', async () => {
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'throwing-map-job.ts');
  const line =
    readFileSync(job, 'utf8')
      .split('\n')
      .findIndex((text) => text.includes('THROW-LINE')) + 1;
  const result = await weir(['run', job, '--no-ui']);
  assert.notEqual(result.code, 0, result.stderr);
  assert.match(result.stderr, /^weir: .*operator "check amount" \(1\/1\) failed on a record \(value .*\): record 100 is bad$/m, result.stderr);
  assert.ok(result.stderr.includes(`throwing-map-job.ts:${line}:`), `the error names throwing-map-job.ts:${line}:\n${result.stderr}`);
  assert.match(result.stderr, /at checkAmount \(/, result.stderr);
});

test('a job file with a syntax error: the error names file, line and column', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-syntax-'));
  folders.push(folder);
  const typeScript = join(folder, 'bad-job.ts');
  await writeFile(typeScript, "const a: number = 1;\nexport default {\n  name: 'x',,\n};\n");
  const ts = await weir(['run', typeScript, '--no-ui']);
  assert.notEqual(ts.code, 0);
  assert.ok(ts.stderr.includes(`syntax error in the job module at ${typeScript}:3:13`), ts.stderr);
  assert.match(ts.stderr, /hint: fix line 3, column 13 of /, ts.stderr);

  // Valid TypeScript whose JavaScript is not: V8's error says what, and Weir finds where.
  const javaScript = join(folder, 'bad-job.mjs');
  await writeFile(javaScript, "const a = 1;\nexport default {\n  name: 'x' +* 2,\n};\n");
  const js = await weir(['run', javaScript, '--no-ui']);
  assert.notEqual(js.code, 0);
  assert.ok(js.stderr.includes(`syntax error in the job module at ${javaScript}:3:14: Unexpected token '*'`), js.stderr);
});

test("the job's status (/api/job's failure) keeps the message with the job's line and the stack", async () => {
  const { startJob } = await import('../../../src/runtime/jobmaster/job-master.ts');
  const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'throwing-map-job.ts');
  const line =
    readFileSync(job, 'utf8')
      .split('\n')
      .findIndex((text) => text.includes('THROW-LINE')) + 1;
  const client = await startJob({ job });
  await assert.rejects(client.result, /record 100 is bad/);
  const failure = client.status().failure;
  assert.ok(failure?.message.includes(`throwing-map-job.ts:${line}:`), JSON.stringify(failure));
  assert.ok(failure?.stack?.includes(`throwing-map-job.ts:${line}:`), JSON.stringify(failure));
});
