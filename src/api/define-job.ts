import type { EnvironmentConfigInput } from '../core/config/environment-config.ts';
import { createJob, type Job } from '../graph/job.ts';
import { connectDeadLetters } from './connect-dead-letters.ts';
import { StreamExecutionEnvironment } from './stream-execution-environment.ts';

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

/** Makes a job of its definition: the module's default export, which `weir run` and every worker load. */
export function defineJob(definition: JobDefinition): JobDefinition & Job {
  return createJob(definition, () => {
    const env = new StreamExecutionEnvironment();
    definition.build(env);
    connectDeadLetters(env.graph);
    return env.graph;
  });
}
