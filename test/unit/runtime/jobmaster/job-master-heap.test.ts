import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { environmentConfigSchema } from '../../../../src/core/config/environment-config.ts';
import { DEFAULT_YOUNG_GENERATION_MB } from '../../../../src/runtime/jobmaster/job-master-heap.ts';

const moduleUrl = new URL('../../../../src/runtime/jobmaster/job-master-heap.ts', import.meta.url).href;

/** Runs `body` in a fresh process (V8's flags are the process's) and returns what it printed as JSON. */
function inFreshProcess(body: string): { main: number; worker: number } {
  const script = `
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
const heap = await import(${JSON.stringify(moduleUrl)});
const newSpaceMb = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576;
const churn = () => { const keep = []; for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 1e5) keep.length = 0; } };
const workerNewSpaceMb = () => new Promise((resolve, reject) => {
  const worker = new Worker("const v8 = process.getBuiltinModule('node:v8'); process.getBuiltinModule('node:worker_threads').parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576);", { eval: true, resourceLimits: { maxYoungGenerationSizeMb: ${DEFAULT_YOUNG_GENERATION_MB} } });
  worker.once('message', (mb) => { resolve(mb); void worker.terminate(); });
  worker.once('error', reject);
});
${body}`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout) as { main: number; worker: number };
}

describe('the job master thread’s young generation', () => {
  it('stays at V8’s initial size on the main thread, while workers start at their full young generation', () => {
    const result = inFreshProcess(`
heap.keepJobMasterYoungGenerationSmall();
churn();
console.log(JSON.stringify({ main: newSpaceMb(), worker: await workerNewSpaceMb() }));`);
    assert.ok(result.main <= 2, `main thread new space ${result.main} MB`);
    // V8 counts one semi-space before the worker's first scavenge: its full size from the start (V8's own start is 1 MB).
    assert.equal(result.worker, DEFAULT_YOUNG_GENERATION_MB / 3);
  });

  it('grows again once restored (a cluster member runs records on its main thread)', () => {
    const result = inFreshProcess(`
heap.keepJobMasterYoungGenerationSmall();
heap.restoreYoungGenerationGrowth();
churn();
console.log(JSON.stringify({ main: newSpaceMb() }));`);
    assert.ok(result.main > 2, `main thread new space ${result.main} MB`);
  });

  it('gives workers of a job with its own youngGenerationMb their semi-space', () => {
    const result = inFreshProcess(`
heap.keepJobMasterYoungGenerationSmall();
heap.startWorkersAtFullYoungGeneration(24);
console.log(JSON.stringify({ worker: await workerNewSpaceMb() }));`);
    // The worker's resourceLimits allow 16 MB semi-spaces; it starts at the 8 MB that 24 MB asks for.
    assert.equal(result.worker, 8);
  });

  it('knows workerHeap.youngGenerationMb’s default', () => {
    assert.equal(environmentConfigSchema.parse({}).workerHeap.youngGenerationMb, DEFAULT_YOUNG_GENERATION_MB);
  });
});
