import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { connectorDefaults } from '../../core/config/connector-defaults.ts';
import { type EnvironmentConfigInput, parseEnvironmentConfig } from '../../core/config/environment-config.ts';
import { jobModuleUrl } from './load-job.ts';
import { WarmWorkers } from './warm-workers.ts';

/**
 * `weir run`'s worker threads, started before its job ({@link WarmWorkers}), as many and with the
 * heap limits the command line and the config file give (the job's own config, not loaded yet, may
 * change them: the attempt then starts what differs). Undefined when those settings do not parse:
 * the job's load reports that.
 */
export function startWarmWorkers(
  job: string,
  config: EnvironmentConfigInput,
  configFile: { config: EnvironmentConfigInput } | undefined,
): WarmWorkers | undefined {
  let guess: ReturnType<typeof parseEnvironmentConfig>;
  try {
    guess = parseEnvironmentConfig(Object.assign({}, configFile?.config, config));
  } catch {
    return undefined;
  }
  return WarmWorkers.start({
    jobModuleUrl: jobModuleUrl(job),
    count: guess.workers,
    heap: guess.workerHeap,
    connectorDefaults: connectorDefaults(),
  });
}
