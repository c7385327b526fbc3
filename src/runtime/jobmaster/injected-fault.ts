import { WeirError } from '../../core/errors/weir-error.ts';

/**
 * Crash points for tests, off unless WEIR_FAULT names one: `WEIR_FAULT=<point>:<checkpoint id>`
 * SIGKILLs the whole process when that point is reached for that checkpoint (or for any
 * checkpoint at or above it with `>=`); `WEIR_FAULT=<point>:<checkpoint id>:fail` fails the
 * execution attempt there instead (the job master lives on: it restarts the job or, with no restart
 * left, ends it as failed). Points:
 *
 * - `after-checkpoint-metadata`: the checkpoint's metadata is durable, but no task has been told it
 *   completed, so no sink has committed: the crash between "checkpoint complete" and "commit".
 * - `checkpoint-acknowledged`: every task has acknowledged the checkpoint, so the coordinator has
 *   begun writing its metadata (hold that write with WEIR_TEST_STORAGE_DELAY=metadata:<id>:<ms>):
 *   a task failure while a checkpoint is being completed.
 */
const spec = process.env.WEIR_FAULT;
const match = spec === undefined ? null : /^([a-z-]+):(>=)?(\d+)(:fail)?$/.exec(spec);

/** The point WEIR_FAULT names, if any: callers that must count to know they reached it do so only then. */
export const injectedFaultPoint: string | undefined = match?.[1];

/** Kills the process at a matching point; in `:fail` mode returns the failure the attempt must end with instead. */
export function injectedFault(point: string, checkpointId: number): WeirError | undefined {
  if (match === null || match[1] !== point) return undefined;
  const target = Number(match[3]);
  if (!(match[2] === '>=' ? checkpointId >= target : checkpointId === target)) return undefined;
  if (match[4] === ':fail') {
    return new WeirError('TASK_FAILED', `WEIR_FAULT ${spec}: injected failure at ${point} of checkpoint ${checkpointId}`, { fault: 'internal' });
  }
  process.stderr.write(`weir: WEIR_FAULT ${spec}: killing the process at ${point} of checkpoint ${checkpointId}\n`);
  process.kill(process.pid, 'SIGKILL');
  return undefined;
}
