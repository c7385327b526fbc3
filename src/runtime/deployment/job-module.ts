import { WeirError } from '../../core/errors/weir-error.ts';
import { isJob, type Job } from '../../graph/job.ts';

/** Imports a job module and returns its job; a module without one is a clear error. */
export async function loadJobModule(url: string): Promise<Job> {
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new WeirError('JOB_MODULE_FAILED', `cannot load the job module ${url}: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'check the path and that the module runs on its own (`node <file>`)',
      cause: error,
    });
  }
  const job = module.default;
  if (!isJob(job)) {
    throw new WeirError('NOT_A_JOB', `the module ${url} does not export a job`, {
      hint: "make its default export `defineJob({ name, build(env) { ... } })` from 'weir'",
    });
  }
  return job;
}
