import type { EnvironmentConfigInput } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { StreamExecutionEnvironment } from './stream-execution-environment.ts';

const JOB = Symbol.for('weir.job');

/**
 * A job: a module whose default export is `defineJob(...)`. Every worker thread imports the module
 * and calls `build`, so user functions run where the data is. Variables of the main thread are not
 * shared with the workers: a job builds everything it needs inside the module.
 */
export interface JobDefinition {
  readonly name: string;
  /** The environment's options; the CLI and tests may override them. */
  readonly config?: EnvironmentConfigInput;
  build(env: StreamExecutionEnvironment): void;
}

export interface Job extends JobDefinition {
  readonly [JOB]: true;
}

export function defineJob(definition: JobDefinition): Job {
  return { ...definition, [JOB]: true };
}

export function isJob(value: unknown): value is Job {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[JOB] === true;
}

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
