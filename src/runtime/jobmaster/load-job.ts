import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type EnvironmentConfig, type EnvironmentConfigInput, parseEnvironmentConfig } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { buildStreamGraph, type Job } from '../../graph/job.ts';
import { buildJobGraph, type JobGraph } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';
import { loadJobModule } from '../deployment/job-module.ts';
import type { RunJobOptions } from './job-client.ts';

export interface LoadedJob {
  /** The job module's file URL: what every worker thread loads. */
  url: string;
  job: Job;
  config: EnvironmentConfig;
  streamGraph: StreamGraph;
  graph: JobGraph;
}

/** The job module's URL: a path resolved against the working folder, or a file URL as it is. */
export function jobModuleUrl(job: string): string {
  return job.startsWith('file:') ? job : pathToFileURL(resolve(job)).href;
}

/** The settings merged setting by setting across the layers (the others: a layer's value replaces the one below). */
const MERGED = ['checkpointing', 'cluster'] as const;

/**
 * Loads a job module and plans it: its settings are the options over the config file over the
 * job's own (checkpointing and cluster merged setting by setting: `--cluster <id>` keeps a config
 * file's `cluster.threads` or `cluster.keyedTasks`).
 */
export async function loadJob(options: Pick<RunJobOptions, 'job' | 'config' | 'configFile'>): Promise<LoadedJob> {
  const url = jobModuleUrl(options.job);
  const job = await loadJobModule(url);
  const layers = [job.config, options.configFile?.config, options.config];
  const merged: Partial<EnvironmentConfigInput> = {};
  for (const key of MERGED) {
    if (layers.some((layer) => layer?.[key] !== undefined)) Object.assign(merged, { [key]: Object.assign({}, ...layers.map((layer) => layer?.[key])) });
  }
  const config = withConfigFileNamed(options.configFile?.path, () => parseEnvironmentConfig(Object.assign({}, ...layers, merged)));
  const streamGraph = buildStreamGraph(job);
  const graph = buildJobGraph(job.name, streamGraph, config);
  return { url, job, config, streamGraph, graph };
}

/** A configuration error names the config file when one took part, so a typo in it is found where it is. */
function withConfigFileNamed<T>(path: string | undefined, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (path === undefined || !(error instanceof WeirError) || error.code !== 'INVALID_CONFIG') throw error;
    throw new WeirError('INVALID_CONFIG', `${error.message} (the job's settings, ${path} and the command line together)`, {
      hint: `fix the named settings in ${path}, the job's config or the options; docs/configuration.md lists every option`,
      cause: error,
    });
  }
}
