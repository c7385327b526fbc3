import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

/**
 * A worker thread ended (Worker.terminate: a job cancelled, a failover's restart) while a disk
 * backend's base is being copied by lmdb must not take the process down. Found 2026-12-07 (a 50M-key
 * bench in a 1 GB cgroup, then reproduced here): lmdb-js's copy completes during the worker's
 * teardown and throws into the dying environment, `FATAL ERROR: Error::ThrowAsJavaScriptException
 * napi_throw`, and the whole process aborts (exit 134). Skipped until fixed (the fix: dispose the disk
 * backends, their copies ended, before a worker is terminated, or copy outside the worker's loop).
 * `WEIR_RUN_KNOWN_DEFECTS=1` runs it (it fails: exit SIGABRT).
 */
test('a worker terminated while its store is being copied leaves the process alive', {
  skip: process.env.WEIR_RUN_KNOWN_DEFECTS === undefined && 'known defect (2026-12-07): the process aborts with napi_throw; see the comment above',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-terminate-copy-'));
  try {
    const fixture = new URL('../../fixtures/lmdb-copy-worker.ts', import.meta.url).href;
    const script = `
        import { Worker } from 'node:worker_threads';
        const worker = new Worker(new URL(${JSON.stringify(fixture)}), { execArgv: [], workerData: { dir: ${JSON.stringify(dir)} } });
        await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
        await worker.terminate();
        await new Promise((resolve) => setTimeout(resolve, 3000));
        console.log('alive');
      `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, `exit ${run.status} ${run.signal ?? ''}: ${run.stderr.split('\n').slice(0, 3).join(' / ')}`);
    assert.match(run.stdout, /alive/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
