import { Command, Option } from 'commander';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { durationArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

const DEFAULT_URL = 'http://127.0.0.1:8081';

/** The job's --ui-token, when it was started with one (never printed). */
const tokenOption = () => new Option('--token <token>', "the job's --ui-token, when it was started with one").env('WEIR_UI_TOKEN');

async function post(url: string, path: string, token: string | undefined): Promise<{ checkpointId: number; path: string }> {
  let response: Response;
  try {
    const headers: Record<string, string> = token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` };
    response = await fetch(new URL(path, url), { method: 'POST', headers });
  } catch (error) {
    throw new WeirError(
      'JOB_UNREACHABLE',
      `no running job answers at ${url}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error)}`,
      {
        hint: 'give the --url a running `weir run` printed (its --ui-port)',
        fault: 'external',
      },
    );
  }
  const body = (await response.json()) as { checkpointId: number; path: string; error?: string; hint?: string };
  if (!response.ok)
    throw new WeirError('SAVEPOINT_FAILED', `the job at ${url} answered ${response.status}: ${body.error}`, { hint: body.hint, fault: 'external' });
  return body;
}

interface ClusterOptions extends KafkaSettingsOptions {
  cluster?: string;
  checkpointStorage?: string;
  timeout: number;
}

/** The cluster options of `weir savepoint` and `weir stop` (docs/scale-out.md). */
function addClusterOptions(command: Command): Command {
  return addKafkaOptions(
    command
      .option('--cluster <id>', 'a cluster (weir run --cluster <id>): one savepoint across every task, taken through Kafka (no --url)')
      .option(
        '--checkpoint-storage <folder|s3-url>',
        "with --cluster: the cluster's --checkpoint-storage (default: the one its tasks' checkpoints name); the savepoint goes to its savepoints/ folder",
      )
      .addOption(
        new Option('--timeout <duration>', 'with --cluster: how long every task has to commit its part').default(300_000, '5m').argParser(durationArgument),
      ),
  );
}

async function clusterSavepoint(options: ClusterOptions, stop: 'suspend' | 'drain' | undefined): Promise<{ id: number; path: string }> {
  const cluster = options.cluster as string;
  useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
  const { resolveKafkaConnection } = await import('../../connectors/kafka/kafka-default-connection.ts');
  const { takeClusterSavepoint } = await import('../../cluster/cluster-savepoint.ts');
  const { bootstrap, connection } = resolveKafkaConnection({}, stop === undefined ? 'weir savepoint --cluster' : 'weir stop --cluster');
  return takeClusterSavepoint({
    cluster,
    storage: options.checkpointStorage,
    bootstrap,
    connection,
    stop,
    timeoutMs: options.timeout,
    log: (line) => process.stderr.write(`${line}\n`),
  });
}

/** `weir savepoint`: a savepoint of a running job, through its REST API (or of a cluster, through Kafka). */
export function savepointCommand(): Command {
  return addClusterOptions(
    new Command('savepoint')
      .description(
        "take a savepoint of a running job (through its REST API, or of a cluster with --cluster); prints the savepoint's folder once its transactions are committed",
      )
      .option('--url <url>', "the job's REST API", DEFAULT_URL)
      .addOption(tokenOption()),
  ).action(async (options: ClusterOptions & { url: string; token?: string }) => {
    const savepoint = options.cluster === undefined ? await post(options.url, '/api/savepoints', options.token) : await clusterSavepoint(options, undefined);
    console.log(`savepoint ${'checkpointId' in savepoint ? savepoint.checkpointId : savepoint.id}: ${savepoint.path}`);
  });
}

/** `weir stop --savepoint`: stop a running job with a savepoint, through its REST API (or every member of a cluster, through Kafka). */
export function stopCommand(): Command {
  return addClusterOptions(
    new Command('stop')
      .description(
        'stop a running job with a savepoint (through its REST API, or every member of a cluster with --cluster); resume it with `weir run <job> --from-savepoint <folder>`',
      )
      .option('--savepoint', 'take a savepoint, then stop (SIGTERM or Ctrl-C cancel without one); required without --cluster, which always takes one')
      .option('--drain', 'send the end of event time first, so every event-time window and timer fires into the savepoint', false)
      .option('--url <url>', "the job's REST API", DEFAULT_URL)
      .addOption(tokenOption()),
  ).action(async (options: ClusterOptions & { url: string; drain: boolean; savepoint?: boolean; token?: string }) => {
    if (options.cluster !== undefined) {
      const savepoint = await clusterSavepoint(options, options.drain ? 'drain' : 'suspend');
      console.log(`stopped cluster "${options.cluster}" with savepoint ${savepoint.id}: ${savepoint.path}`);
      return;
    }
    if (options.savepoint !== true) {
      throw new WeirError('INVALID_CONFIG', 'weir stop takes a savepoint: --savepoint is required', {
        hint: 'weir stop --savepoint [--url <url>], or weir stop --cluster <id>; to cancel without a savepoint, send the job SIGTERM or Ctrl-C',
      });
    }
    const savepoint = await post(options.url, options.drain ? '/api/stop?drain=true' : '/api/stop', options.token);
    console.log(`stopped with savepoint ${savepoint.checkpointId}: ${savepoint.path}`);
  });
}
