import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { isJob, type Job } from '../../graph/job.ts';
import { syntaxErrorLocation } from './syntax-error-location.ts';

/**
 * Imports a job module and returns its job; a module without one is a clear error. A syntax error
 * names its file, line and column; an error the module throws while it loads keeps where in the
 * job it was thrown.
 */
export async function loadJobModule(url: string): Promise<Job> {
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const location = syntaxErrorLocation(error, url);
    if (location !== undefined) {
      throw new WeirError(
        'JOB_MODULE_FAILED',
        `syntax error in the job module at ${location.file}:${location.line}:${location.column}: ${message}\n    ${location.source.trim()}`,
        { hint: `fix line ${location.line}, column ${location.column} of ${location.file}`, cause: error },
      );
    }
    throw new WeirError(
      'JOB_MODULE_FAILED',
      `cannot load the job module ${url}: ${withUserCodeLocation(message, error instanceof Error ? error.stack : undefined)}`,
      {
        hint: 'check the path and that the module runs on its own (`node <file>`)',
        cause: error,
      },
    );
  }
  const job = module.default;
  if (!isJob(job)) {
    throw new WeirError('NOT_A_JOB', `the module ${url} does not export a job`, {
      hint: "make its default export `defineJob({ name, build(env) { ... } })` from 'weir-streams'",
    });
  }
  return job;
}
