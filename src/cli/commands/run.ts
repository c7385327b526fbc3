import { Command, InvalidArgumentError, Option } from 'commander';
import type { EnvironmentConfigInput } from '../../core/config/environment-config.ts';
import { LOG_LEVELS, type LogFormat, type LogLevel } from '../../core/logging/logger.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import { startJob } from '../../runtime/jobmaster/job-master.ts';
import { startRestServer } from '../../web/rest-server.ts';
import { durationArgument, positiveIntegerArgument } from '../arguments.ts';

interface RunOptions {
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
  checkpointStorage?: string;
  restartAttempts?: number;
  restartDelay?: number;
  noRestart?: boolean;
  fresh: boolean;
  fromSavepoint?: string;
  ui: boolean;
  uiPort: number;
  logLevel?: LogLevel;
  logFormat?: LogFormat;
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
  return new Command('run')
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
    .addOption(new Option('--checkpoint-storage <folder>', 'checkpointing.storage: the checkpoint folder'))
    .addOption(
      new Option('--restart-attempts <n>', 'restartStrategy fixed-delay: restarts allowed (default: exponential-delay, see docs/operations.md)').argParser(
        wholeNumber,
      ),
    )
    .addOption(new Option('--restart-delay <duration>', 'restartStrategy fixed-delay: wait before a restart').argParser(durationArgument))
    .option('--no-restart', 'restartStrategy none: the first failure fails the job')
    .option('--fresh', 'start without restoring the latest checkpoint', false)
    .option('--from-savepoint <path>', 'start from this savepoint (or checkpoint) folder')
    .addOption(
      new Option('--ui-port <port>', 'the web dashboard (/), REST API (/api) and Prometheus metrics (/metrics) on 127.0.0.1; 0 picks a free port')
        .argParser(wholeNumber)
        .default(8081),
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
      if (options.checkpointStorage !== undefined) checkpointing.storage = options.checkpointStorage;
      if (Object.keys(checkpointing).length > 0) config.checkpointing = checkpointing as EnvironmentConfigInput['checkpointing'];
      if (options.noRestart === false) config.restartStrategy = { type: 'none' };
      else if (options.restartAttempts !== undefined || options.restartDelay !== undefined) {
        config.restartStrategy = { type: 'fixed-delay', attempts: options.restartAttempts ?? 3, delay: options.restartDelay ?? 1000 };
      }
      // Set before any worker thread starts: workers inherit the environment and log the same way.
      if (options.logLevel !== undefined) process.env.WEIR_LOG_LEVEL = options.logLevel;
      if (options.logFormat !== undefined) process.env.WEIR_LOG_FORMAT = options.logFormat;
      const logger = processLog();
      const log = (line: string) => logger.info(line);
      const started = Date.now();
      let checkpoints = 0;
      const client = await startJob({
        job,
        config,
        fresh: options.fresh,
        ...(options.fromSavepoint === undefined ? {} : { fromSavepoint: options.fromSavepoint }),
        log: logger,
        onEvent: (event) => {
          if (event.type === 'checkpoint-completed') checkpoints++;
        },
      });
      const server = options.ui ? await startRestServer(client, { port: options.uiPort }) : undefined;
      if (server !== undefined) log(`dashboard at ${server.url}/, REST API at ${server.url}/api, Prometheus metrics at ${server.url}/metrics`);
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
