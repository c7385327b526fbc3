/**
 * Crash points for tests, off unless WEIR_FAULT names one: `WEIR_FAULT=<point>:<checkpoint id>`
 * SIGKILLs the whole process when that point is reached for that checkpoint (or for any
 * checkpoint at or above it with `>=`). Points:
 *
 * - `after-checkpoint-metadata`: the checkpoint's metadata is durable, but no task has been told it
 *   completed, so no sink has committed: the crash between "checkpoint complete" and "commit".
 */
const spec = process.env.WEIR_FAULT;
const match = spec === undefined ? null : /^([a-z-]+):(>=)?(\d+)$/.exec(spec);

export function injectedFault(point: string, checkpointId: number): void {
  if (match === null || match[1] !== point) return;
  const target = Number(match[3]);
  if (match[2] === '>=' ? checkpointId >= target : checkpointId === target) {
    process.stderr.write(`weir: WEIR_FAULT ${spec}: killing the process at ${point} of checkpoint ${checkpointId}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
