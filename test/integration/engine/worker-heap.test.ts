/** workerHeap: the limits reach the worker threads, and a worker out of memory fails the job with the setting named. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'growing-state-job.ts');

test('a worker whose state outgrows workerHeap.oldGenerationMb fails the job with WORKER_OUT_OF_MEMORY, naming the setting', async () => {
  const error = await runJob({
    job: jobModule,
    config: { parallelism: 1, workers: 1, workerHeap: { oldGenerationMb: 64 }, restartStrategy: { type: 'none' } },
  }).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof WeirError, `expected a WeirError, got ${String(error)}`);
  const cause = error.code === 'WORKER_OUT_OF_MEMORY' ? error : (error.cause as WeirError | undefined);
  assert.equal(cause?.code, 'WORKER_OUT_OF_MEMORY', String(error));
  assert.match(cause.message, /workerHeap\.oldGenerationMb=64/);
  assert.match(cause.hint ?? '', /raise workerHeap\.oldGenerationMb/);
});
