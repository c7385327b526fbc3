import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import type { EnvironmentConfigInput } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { releaseStartupHeap } from '../../core/heap/release-startup-heap.ts';
import { LOG_LEVELS, type LogFormat, type LogLevel } from '../../core/logging/logger.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import { startJob } from '../../runtime/jobmaster/job-master.ts';
import { loadJob } from '../../runtime/jobmaster/load-job.ts';
import { startWarmWorkers } from '../../runtime/jobmaster/start-warm-workers.ts';
import { lmdbCopiesRunning } from '../../state/lmdb-copy-service.ts';
import { durationArgument, positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

/** A job config file: a JSON object of the job's settings, read whole (its errors name it). */
async function readConfigFile(path: string): Promise<{ path: string; config: EnvironmentConfigInput }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new WeirError('INVALID_CONFIG', `--config ${path}: cannot read it (${(error as Error).message})`, {
      hint: 'give the path of a JSON file of the job’s settings',
    });
  }
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (error) {
    throw new WeirError('INVALID_CONFIG', `--config ${path} is not JSON: ${(error as Error).message}`, {
      hint: 'write the settings as a JSON object, e.g. { "parallelism": 2, "checkpointing": { "interval": "1s", "storage": ".weir/checkpoints" } }',
    });
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new WeirError('INVALID_CONFIG', `--config ${path} holds ${Array.isArray(config) ? 'an array' : JSON.stringify(config)}, not an object of settings`, {
      hint: 'write the settings as a JSON object, e.g. { "parallelism": 2 }',
    });
  }
  return { path, config: config as EnvironmentConfigInput };
}

interface RunOptions extends KafkaSettingsOptions {
  config?: string;
  parallelism?: number;
  maxParallelism?: number;
  workers?: number;
  checkpointInterval?: number;
  checkpointMode?: 'exactly-once' | 'at-least-once';
  checkpointTimeout?: number;
  minPause?: number;
  maxConcurrentCheckpoints?: number;
  tolerableFailures?: number;
  retainedCheckpoints?: number;
  incrementalCheckpoints?: boolean;
  localRecovery?: boolean;
  checkpointStorage?: string;
  stateBackend?: 'heap' | 'disk';
  stateDir?: string;
  restartAttempts?: number;
  restartDelay?: number;
  /** Commander stores `--no-restart` as `restart: false`. */
  restart: boolean;
  fresh: boolean;
  fromSavepoint?: string;
  ui: boolean;
  uiPort: number;
  uiHost: string;
  uiToken?: string;
  logLevel?: LogLevel;
  logFormat?: LogFormat;
  cluster?: string;
  clusterThreads?: number;
  keyedTasks?: number;
  instanceId?: string;
  sessionTimeout?: number;
}

const wholeNumber = (value: string): number => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('give a whole number of 0 or more.');
  return Number(value);
};

/**
 * `weir run <job>`: runs a job module until it ends (bounded input) or fails for good. It resumes
 * from the latest completed checkpoint of its checkpoint folder unless --fresh; --from-savepoint
 * starts from a savepoint. Options mirror the job's config and override it.
 */
export function runCommand(): Command {
  return addKafkaOptions(new Command('run'))
    .description('run a job module (export default defineJob(...)); resumes from its latest checkpoint unless --fresh')
    .argument('<job>', 'the job module, a .ts or .js file')
    .addOption(new Option('--parallelism <n>', 'default parallelism of every operator').argParser(positiveIntegerArgument))
    .addOption(
      new Option('--max-parallelism <n>', 'key groups: the most a keyed operator can be scaled to (fixed for the life of a job)').argParser(
        positiveIntegerArgument,
      ),
    )
    .addOption(new Option('--workers <n>', 'worker threads (default: the number of cores)').argParser(positiveIntegerArgument))
    .addOption(new Option('--checkpoint-interval <duration>', 'checkpointing.interval, e.g. 1s').argParser(durationArgument))
    .addOption(new Option('--checkpoint-mode <mode>', 'checkpointing.mode').choices(['exactly-once', 'at-least-once']))
    .addOption(new Option('--checkpoint-timeout <duration>', 'checkpointing.timeout').argParser(durationArgument))
    .addOption(new Option('--min-pause <duration>', 'checkpointing.minPause').argParser(durationArgument))
    .addOption(new Option('--max-concurrent-checkpoints <n>', 'checkpointing.maxConcurrent').argParser(positiveIntegerArgument))
    .addOption(new Option('--tolerable-failures <n>', 'checkpointing.tolerableFailures').argParser(wholeNumber))
    .addOption(new Option('--retained-checkpoints <n>', 'checkpointing.retained').argParser(positiveIntegerArgument))
    .addOption(new Option('--incremental-checkpoints', 'checkpointing.incremental: a checkpoint writes what changed since the last (either state backend)'))
    .addOption(new Option('--local-recovery', "checkpointing.localRecovery: a copy of each task's state files on this machine, read back by a restart here"))
    .addOption(new Option('--state-backend <backend>', 'where keyed state lives: heap (default) or disk (lmdb under --state-dir)').choices(['heap', 'disk']))
    .addOption(new Option('--state-dir <folder>', "the disk backend's local working folders (default: the OS temp folder's weir-state)"))
    .addOption(new Option('--checkpoint-storage <folder-or-s3-url>', 'checkpointing.storage: the checkpoint folder, or s3://<bucket>/<prefix>'))
    .addOption(
      new Option('--restart-attempts <n>', 'restartStrategy fixed-delay: restarts allowed (default: exponential-delay, see docs/operations.md)').argParser(
        wholeNumber,
      ),
    )
    .addOption(new Option('--restart-delay <duration>', 'restartStrategy fixed-delay: wait before a restart').argParser(durationArgument))
    .addOption(new Option('--no-restart', 'restartStrategy none: the first failure fails the job').conflicts(['restartAttempts', 'restartDelay']))
    .option(
      '--config <file>',
      "a JSON file of the job's settings (parallelism, checkpointing, restartStrategy, ...; docs/configuration.md): over the job's own, under these options",
    )
    .option('--cluster <id>', 'cluster mode: this process is a member of the cluster <id>, sharing the job with the others (docs/scale-out.md)')
    .option('--instance-id <id>', 'cluster mode: static membership, one id per member (a member restarted under it gets its tasks back at once)')
    .addOption(new Option('--session-timeout <duration>', 'cluster mode: a member silent this long loses its tasks (default 10s)').argParser(durationArgument))
    .addOption(
      new Option('--cluster-threads <n>', 'cluster.threads: the worker threads a member runs its tasks on (default: the number of cores)').argParser(
        positiveIntegerArgument,
      ),
    )
    .addOption(
      new Option(
        '--keyed-tasks <n>',
        'cluster.keyedTasks: the tasks of each keyed stage, each a range of key groups (default: the most partitions of a source, at most maxParallelism; a cluster that ran before keeps its count)',
      ).argParser(positiveIntegerArgument),
    )
    .option('--fresh', 'start without restoring the latest checkpoint', false)
    .option('--from-savepoint <path>', 'start from this savepoint (or checkpoint) folder')
    .addOption(
      new Option('--ui-port <port>', 'the web dashboard (/), REST API (/api), Prometheus metrics (/metrics) and health probes (/health); 0 picks a free port')
        .argParser(wholeNumber)
        .default(8081),
    )
    .addOption(
      new Option('--ui-host <address>', 'the address they listen on; any but loopback exposes the API, which has no users: give --ui-token').default(
        '127.0.0.1',
      ),
    )
    .addOption(
      new Option(
        '--ui-token <token>',
        'a secret /api and /metrics then need as "Authorization: Bearer <token>"; prefer the variable WEIR_UI_TOKEN (a command line is visible to every user)',
      ).env('WEIR_UI_TOKEN'),
    )
    .option('--no-ui', 'serve no dashboard, REST API or metrics')
    .addOption(
      new Option(
        '--log-level <level>',
        'debug shows every checkpoint; info a summary a minute, restarts, broker outages (env WEIR_LOG_LEVEL; default info)',
      ).choices(LOG_LEVELS),
    )
    .addOption(
      new Option('--log-format <format>', 'pretty (time, level, message) or json, one object a line (env WEIR_LOG_FORMAT; default pretty)').choices([
        'pretty',
        'json',
      ]),
    )
    .action(async (job: string, options: RunOptions) => {
      const config: EnvironmentConfigInput = {};
      if (options.parallelism !== undefined) config.parallelism = options.parallelism;
      if (options.maxParallelism !== undefined) config.maxParallelism = options.maxParallelism;
      if (options.workers !== undefined) config.workers = options.workers;
      const checkpointing: Record<string, unknown> = {};
      if (options.checkpointInterval !== undefined) checkpointing.interval = options.checkpointInterval;
      if (options.checkpointMode !== undefined) checkpointing.mode = options.checkpointMode;
      if (options.checkpointTimeout !== undefined) checkpointing.timeout = options.checkpointTimeout;
      if (options.minPause !== undefined) checkpointing.minPause = options.minPause;
      if (options.maxConcurrentCheckpoints !== undefined) checkpointing.maxConcurrent = options.maxConcurrentCheckpoints;
      if (options.tolerableFailures !== undefined) checkpointing.tolerableFailures = options.tolerableFailures;
      if (options.retainedCheckpoints !== undefined) checkpointing.retained = options.retainedCheckpoints;
      if (options.incrementalCheckpoints === true) checkpointing.incremental = true;
      if (options.localRecovery === true) checkpointing.localRecovery = true;
      if (options.stateBackend !== undefined) config.stateBackend = options.stateBackend;
      if (options.stateDir !== undefined) config.stateDir = options.stateDir;
      if (options.checkpointStorage !== undefined) checkpointing.storage = options.checkpointStorage;
      if (Object.keys(checkpointing).length > 0) config.checkpointing = checkpointing as EnvironmentConfigInput['checkpointing'];
      if (options.cluster !== undefined) {
        config.cluster = {
          id: options.cluster,
          ...(options.instanceId === undefined ? {} : { instanceId: options.instanceId }),
          ...(options.sessionTimeout === undefined ? {} : { sessionTimeout: options.sessionTimeout }),
          ...(options.clusterThreads === undefined ? {} : { threads: options.clusterThreads }),
          ...(options.keyedTasks === undefined ? {} : { keyedTasks: options.keyedTasks }),
        };
      } else if (
        options.instanceId !== undefined ||
        options.sessionTimeout !== undefined ||
        options.clusterThreads !== undefined ||
        options.keyedTasks !== undefined
      ) {
        throw new WeirError('INVALID_CONFIG', '--instance-id, --session-timeout, --cluster-threads and --keyed-tasks are settings of cluster mode', {
          hint: 'give --cluster <id> too',
        });
      }
      if (options.restart === false) config.restartStrategy = { type: 'none' };
      else if (options.restartAttempts !== undefined || options.restartDelay !== undefined) {
        config.restartStrategy = { type: 'fixed-delay', attempts: options.restartAttempts ?? 3, delay: options.restartDelay ?? 1000 };
      }
      // Set before any worker thread starts: workers inherit the environment and log the same way.
      if (options.logLevel !== undefined) process.env.WEIR_LOG_LEVEL = options.logLevel;
      if (options.logFormat !== undefined) process.env.WEIR_LOG_FORMAT = options.logFormat;
      const logger = processLog();
      const log = (line: string) => logger.info(line);
      // The default connection of every Kafka source and sink of the job that does not set its own
      // (handed to the worker threads in memory: never in the job's config or its checkpoints).
      useKafkaSettings(options, log);
      const configFile = options.config === undefined ? undefined : await readConfigFile(options.config);
      // The job's worker threads start now, loading their code while this thread loads the job, takes the
      // checkpoint folder's lock and checks the sinks (a restart after a crash waits for the slower of the two).
      const warmWorkers = options.cluster !== undefined ? undefined : startWarmWorkers(job, config, configFile);
      const loaded =
        options.cluster !== undefined
          ? undefined
          : await loadJob({ job, config, configFile }).catch((error: unknown) => {
              warmWorkers?.close();
              throw error;
            });
      const clusterMode = options.cluster !== undefined || loaded?.config.cluster !== undefined;
      if (clusterMode) warmWorkers?.close();
      const started = Date.now();
      let checkpoints = 0;
      // The main thread's start-up heap, given back once the job runs (the job master runs no records).
      let released = false;
      // The REST server listens before the job loads: a taken port stops the run before anything runs.
      const token = options.uiToken === '' ? undefined : options.uiToken;
      // Loaded on use: without --ui the main thread never holds the dashboard, the REST server or
      // the Prometheus registry, and only cluster mode loads the member (less heap for the job master).
      const web = options.ui ? await import('../../web/rest-server.ts') : undefined;
      const server =
        web === undefined ? undefined : await web.startRestServer({ port: options.uiPort, host: options.uiHost, ...(token === undefined ? {} : { token }) });
      if (server !== undefined) {
        const { isLoopback } = await import('../../web/request-guard.ts');
        log(`dashboard at ${server.url}/, REST API at ${server.url}/api, Prometheus metrics at ${server.url}/metrics`);
        if (token !== undefined) log('the REST API and metrics need the --ui-token (Authorization: Bearer); open the dashboard as <address>/#token=<token>');
        else if (!isLoopback(options.uiHost)) {
          logger.warn(`the REST API on ${options.uiHost} has no authentication: anyone who reaches it can stop the job; give --ui-token (or WEIR_UI_TOKEN)`);
        }
      }
      if (clusterMode) {
        if (options.fresh) {
          await server?.close();
          throw new WeirError('INVALID_CONFIG', '--fresh is not built for cluster mode: each task resumes from its latest checkpoint', {
            hint: 'to start a cluster anew, give it a new --cluster id (its topics and checkpoints are its own); --from-savepoint <folder> starts a new cluster from a savepoint',
          });
        }
        if (options.parallelism !== undefined || options.workers !== undefined) {
          logger.warn(
            '--parallelism and --workers do not apply in cluster mode: a stage has one task per partition of its input, and a member runs its tasks on --cluster-threads worker threads',
          );
        }
        const { runClusterMember } = await import('./run-cluster-member.ts');
        await runClusterMember(
          { job, config, configFile, log: logger, ...(options.fromSavepoint === undefined ? {} : { fromSavepoint: options.fromSavepoint }) },
          server,
        );
        return;
      }
      const client = await startJob({
        job,
        config,
        configFile,
        ...(warmWorkers === undefined ? {} : { warmWorkers }),
        fresh: options.fresh,
        ...(options.fromSavepoint === undefined ? {} : { fromSavepoint: options.fromSavepoint }),
        log: logger,
        onEvent: (event) => {
          if (event.type === 'checkpoint-completed') checkpoints++;
          // Off a restart's critical path (the workers load and open meanwhile): after the first checkpoint
          // completed, or as the workers start when nothing checkpoints.
          if (!released && (event.type === 'checkpoint-completed' || (event.type === 'started' && loaded?.config.checkpointing === undefined))) {
            released = true;
            setImmediate(() => {
              try {
                releaseStartupHeap();
              } catch (error) {
                // Only memory is at stake: the job runs on with the heap it has.
                logger.warn(`could not give back the main thread's start-up heap: ${(error as Error).message}`);
              }
            });
          }
        },
      }).catch(async (error: unknown) => {
        await server?.close();
        throw error;
      });
      server?.attach(client);
      // SIGTERM or SIGINT cancels the job (its tasks close and its sinks abort their open transactions); a second one exits at once.
      let signalled = false;
      const onSignal = (signal: NodeJS.Signals) => {
        if (signalled) {
          log(`${signal} again: exiting now`);
          process.exit(130);
        }
        signalled = true;
        log(`${signal}: cancelling the job (open transactions are aborted; the next run resumes from its latest checkpoint)`);
        void client.cancel().catch(() => {});
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      const result = await client.result.finally(() => server?.close());
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      // A disk backend's base still copied for a worker that was ended (cancel, failover) would keep
      // the process up until lmdb finishes it: nothing needs it, so the process exits without it.
      if (lmdbCopiesRunning() > 0) setImmediate(() => process.exit(process.exitCode ?? 0));
      if (result.cancelled) {
        console.log(
          `job "${client.graph.jobName}" cancelled after ${((Date.now() - started) / 1000).toFixed(1)}s: ${checkpoints} checkpoints, ${result.restarts} restarts, last checkpoint ${result.lastCheckpointId ?? 'none'}`,
        );
        return;
      }
      console.log(
        `job "${client.graph.jobName}" finished in ${((Date.now() - started) / 1000).toFixed(1)}s: ${checkpoints} checkpoints, ${result.restarts} restarts, last checkpoint ${result.lastCheckpointId ?? 'none'}`,
      );
    });
}
