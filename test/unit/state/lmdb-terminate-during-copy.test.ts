import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

/**
 * A worker thread ended (Worker.terminate: a job cancelled, a failover's restart) while a disk
 * backend's base is being copied by lmdb must not take the process down. Found 2026-12-07 (a 50M-key
 * bench in a 1 GB cgroup, then reproduced here): lmdb-js's copy completed during the worker's
 * teardown and threw into the dying environment, `FATAL ERROR: Error::ThrowAsJavaScriptException
 * napi_throw`, and the whole process aborted (exit 134). The main thread now makes the copies of the
 * threads it starts (lmdb-copy-service.ts), as the runtime and cluster mode do: the copy runs on to
 * its end there. Without serveDiskBackendCopies() in the script below the process still aborts (lmdb-js).
 */
test('a worker terminated while its store is being copied leaves the process alive, its copy ended by the main thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-terminate-copy-'));
  try {
    const fixture = new URL('../../fixtures/lmdb-copy-worker.ts', import.meta.url).href;
    const script = `
        import { existsSync, statSync } from 'node:fs';
        import { Worker } from 'node:worker_threads';
        import { serveDiskBackendCopies } from ${JSON.stringify(new URL('../../../src/state/lmdb-store.ts', import.meta.url).href)};
        serveDiskBackendCopies();
        const worker = new Worker(new URL(${JSON.stringify(fixture)}), { execArgv: [], workerData: { dir: ${JSON.stringify(dir)} } });
        await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
        await worker.terminate();
        await new Promise((resolve) => setTimeout(resolve, 3000));
        const file = ${JSON.stringify(join('BASE', 'data.mdb'))}.replace('BASE', process.argv[1]);
        console.log('alive', existsSync(file) ? statSync(file).size : 0);
      `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, join(dir, 'base-1')], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, `exit ${run.status} ${run.signal ?? ''}: ${run.stderr.split('\n').slice(0, 3).join(' / ')}`);
    const size = Number(/^alive (\d+)$/m.exec(run.stdout)?.[1]);
    assert.ok(size > 1_000_000, `the main thread wrote the copy on after the worker ended (${run.stdout.trim()})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
