/**
 * A crash point for tests, after the conventions of runtime/jobmaster/injected-fault.ts:
 * `WEIR_FAULT=task-thread:<checkpoint id>` makes the first task thread of a member (thread 0, not a
 * replacement of it) throw an uncaught error once one of its tasks has committed that checkpoint
 * (or any above it): the thread dies, its tasks fail and start again after their back-off, and
 * the member's other threads run on.
 */
import { writeSync } from 'node:fs';

const spec = process.env.WEIR_FAULT;
const match = spec === undefined ? null : /^task-thread:(\d+)$/.exec(spec);

/** The checkpoint id that crashes the thread, when WEIR_FAULT names this point and `thread` is the one it crashes. */
export function taskThreadFault(thread: number, incarnation: number): number | undefined {
  if (match === null || thread !== 0 || incarnation !== 0) return undefined;
  return Number(match[1]);
}

/** Dies as the point says: an uncaught error out of the thread's event loop. */
export function crashTaskThread(thread: number, checkpointId: number, task: string): void {
  writeSync(2, `weir: WEIR_FAULT ${spec}: crashing task thread ${thread} (${task} committed checkpoint ${checkpointId})\n`);
  setImmediate(() => {
    throw new Error(`WEIR_FAULT ${spec}: task thread ${thread} crashed`);
  });
}
