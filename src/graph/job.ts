import type { EnvironmentConfigInput } from '../core/config/environment-config.ts';
import type { StreamGraph } from './stream-graph.ts';

/** The key under which a job carries its graph builder; also what marks an object as a job. */
const BUILD_GRAPH = Symbol.for('weir.job');

/**
 * A job as the runtime loads it: the default export of a job module (made by `defineJob` of the
 * API). The runtime never calls the DataStream API itself: it asks the job for its logical plan,
 * once on the main thread and once per task in the workers, so every task gets its own operator
 * and function instances.
 */
export interface Job {
  readonly name: string;
  /** The environment's options; the CLI and tests may override them. */
  readonly config?: EnvironmentConfigInput | undefined;
  /** @internal Builds the job's StreamGraph anew. */
  readonly [BUILD_GRAPH]: () => StreamGraph;
}

/** Makes a job of a name, its options and a function that builds its graph (what `defineJob` does). */
export function createJob<T extends { name: string; config?: EnvironmentConfigInput | undefined }>(definition: T, buildGraph: () => StreamGraph): T & Job {
  return { ...definition, [BUILD_GRAPH]: buildGraph };
}

export function isJob(value: unknown): value is Job {
  return typeof value === 'object' && value !== null && typeof (value as Record<symbol, unknown>)[BUILD_GRAPH] === 'function';
}

/** The job's logical plan, built anew (new operator and function instances on every call). */
export function buildStreamGraph(job: Job): StreamGraph {
  return job[BUILD_GRAPH]();
}
