import { closeSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WeirError } from '../../core/errors/weir-error.ts';

/**
 * Crash points for tests, off unless WEIR_FAULT names one: `WEIR_FAULT=<point>:<checkpoint id>`
 * SIGKILLs the whole process when that point is reached for that checkpoint (or for any
 * checkpoint at or above it with `>=`); `WEIR_FAULT=<point>:<checkpoint id>:fail` fails the
 * execution attempt there instead (the job master lives on: it restarts the job or, with no restart
 * left, ends it as failed); `WEIR_FAULT=<point>:<checkpoint id>:stop` pauses the whole process
 * there with SIGSTOP, the first time only (in any thread), and goes on where it stopped once the test sends
 * SIGCONT (a zombie: a VM pause, a long GC, a stalled disk at that moment). Points:
 *
 * - `after-checkpoint-metadata`: the checkpoint's metadata is durable, but no task has been told it
 *   completed, so no sink has committed: the crash between "checkpoint complete" and "commit".
 * - `checkpoint-acknowledged`: every task has acknowledged the checkpoint, so the coordinator has
 *   begun writing its metadata (hold that write with WEIR_TEST_STORAGE_DELAY=metadata:<id>:<ms>):
 *   a task failure while a checkpoint is being completed.
 * - `owner-sweep` (cluster mode): a task has committed the checkpoint and is about to sweep its
 *   earlier owners' folders (cluster/task-storage.ts), before it lists them; the id is the
 *   checkpoint just committed. With `:stop`: a member paused there wakes after its task moved.
 * - `savepoint-part` (cluster mode): a task has just committed its part of savepoint `<id>`
 *   (cluster/task-savepoint.ts); with `:fail`, its downstream tasks restore their skips.
 * - `sink-commit` (cluster mode): a task with a two-phase-commit sink has committed checkpoint
 *   `<id>` in Kafka (its record holds the sink's committables), and its sink has not committed them
 *   yet (cluster/task-sink.ts). `savepoint-sink-commit`: the same for its part of savepoint `<id>`.
 *   `ended-sink-commit`: the same for its final checkpoint `<id>` (its record says ended).
 * - `task-ended` (cluster mode): a task has just committed its final checkpoint, whose record says
 *   `ended` (bounded input: cluster/cluster-task.ts); the id is that checkpoint's.
 */
const spec = process.env.WEIR_FAULT;
const match = spec === undefined ? null : /^([a-z-]+):(>=)?(\d+)(:fail|:stop)?$/.exec(spec);

/** The point WEIR_FAULT names, if any: callers that must count to know they reached it do so only then. */
export const injectedFaultPoint: string | undefined = match?.[1];

/**
 * Whether a `:stop` fault has paused the process already: it pauses once per process, whichever
 * thread reaches the point first (a cluster member's task threads each load this module, so a
 * module variable alone let a second thread pause the process again right after it was woken).
 * The first thread to create the marker file pauses; the file is this process's (its pid and, on
 * Linux, its start time, so a later process of the same pid pauses too).
 */
/** When this process started, in clock ticks since boot (/proc/self/stat's 22nd field), or '' off Linux. */
function startTicks(): string {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

function firstStop(): boolean {
  try {
    closeSync(openSync(join(tmpdir(), `weir-fault-stop-${process.pid}-${startTicks()}`), 'wx'));
    return true;
  } catch {
    return false;
  }
}

/** Kills (or pauses) the process at a matching point; in `:fail` mode returns the failure the attempt must end with instead. */
export function injectedFault(point: string, checkpointId: number, where = ''): WeirError | undefined {
  if (match === null || match[1] !== point) return undefined;
  const target = Number(match[3]);
  if (!(match[2] === '>=' ? checkpointId >= target : checkpointId === target)) return undefined;
  if (match[4] === ':fail') {
    return new WeirError('TASK_FAILED', `WEIR_FAULT ${spec}: injected failure at ${point} of checkpoint ${checkpointId}`, { fault: 'internal' });
  }
  const at = `${point} of checkpoint ${checkpointId}${where === '' ? '' : ` (${where})`}`;
  if (match[4] === ':stop') {
    if (!firstStop()) return undefined;
    process.stderr.write(`weir: WEIR_FAULT ${spec}: pausing the process at ${at}\n`);
    process.kill(process.pid, 'SIGSTOP'); // returns once the process is woken (SIGCONT)
    process.stderr.write(`weir: WEIR_FAULT ${spec}: woken at ${at}\n`);
    return undefined;
  }
  process.stderr.write(`weir: WEIR_FAULT ${spec}: killing the process at ${at}\n`);
  process.kill(process.pid, 'SIGKILL');
  return undefined;
}
