import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { loadJobModule } from '../../../../src/runtime/deployment/job-module.ts';

test('a job module in a folder whose package.json says "type": "commonjs" gets a hint naming the cause and both fixes', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-cjs-job-'));
  try {
    // What `npm init -y` writes (npm 10 and later): "type": "commonjs".
    await writeFile(join(folder, 'package.json'), JSON.stringify({ name: 'my-job', version: '1.0.0', main: 'index.js', type: 'commonjs' }));
    const job = join(folder, 'job.ts');
    await writeFile(job, "// a job\n\nimport { join } from 'node:path';\nexport default { join };\n");
    const error = await loadJobModule(pathToFileURL(job).href).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, 'JOB_MODULE_FAILED');
    assert.match(error.message, /Cannot use import statement outside a module/);
    assert.match(error.hint ?? '', /loaded as CommonJS/);
    assert.match(error.hint ?? '', /says "type": "commonjs"/);
    assert.match(error.hint ?? '', new RegExp(`add "type": "module" to ${join(folder, 'package.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.match(error.hint ?? '', /job\.mts/);
    assert.doesNotMatch(error.hint ?? '', /fix line/);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
