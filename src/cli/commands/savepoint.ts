import { Command, Option } from 'commander';
import { WeirError } from '../../core/errors/weir-error.ts';

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

/** `weir savepoint`: a savepoint of a running job, through its REST API. */
export function savepointCommand(): Command {
  return new Command('savepoint')
    .description("take a savepoint of a running job (through its REST API); prints the savepoint's folder once its transactions are committed")
    .option('--url <url>', "the job's REST API", DEFAULT_URL)
    .addOption(tokenOption())
    .action(async (options: { url: string; token?: string }) => {
      const savepoint = await post(options.url, '/api/savepoints', options.token);
      console.log(`savepoint ${savepoint.checkpointId}: ${savepoint.path}`);
    });
}

/** `weir stop --savepoint`: stop a running job with a savepoint, through its REST API. */
export function stopCommand(): Command {
  return new Command('stop')
    .description('stop a running job with a savepoint (through its REST API); resume it with `weir run <job> --from-savepoint <folder>`')
    .requiredOption('--savepoint', 'take a savepoint, then stop (SIGTERM or Ctrl-C cancel without one)')
    .option('--drain', 'send the end of event time first, so every event-time window and timer fires into the savepoint', false)
    .option('--url <url>', "the job's REST API", DEFAULT_URL)
    .addOption(tokenOption())
    .action(async (options: { url: string; drain: boolean; token?: string }) => {
      const savepoint = await post(options.url, options.drain ? '/api/stop?drain=true' : '/api/stop', options.token);
      console.log(`stopped with savepoint ${savepoint.checkpointId}: ${savepoint.path}`);
    });
}
