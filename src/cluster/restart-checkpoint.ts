import type { TaskCheckpoint } from './task-checkpoint.ts';

/**
 * The checkpoint a task the group refused (ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID on its commit's
 * TxnOffsetCommit) starts again from without reading the checkpoint topic: what its last run
 * committed (or restored, had it committed nothing), as that run's thread said once the run had
 * stopped. Undefined when that is not provably the task's latest committed record: then the member
 * reads the checkpoint topic after fencing, as at any start. Its producer is fenced again either way
 * (InitProducerId: the refused run's transaction is aborted and its epoch superseded).
 *
 * Why it is the latest committed record when every condition holds:
 * 1. The refused commit did not commit: TxnOffsetCommit comes before EndTxn (commitTaskCheckpoint),
 *    so its transaction, its checkpoint record in it, was aborted. A run commits one checkpoint
 *    after the other, so each earlier one had committed; and its thread reports its latest only
 *    once the run has stopped, so no commit of the run follows. The run restored the latest
 *    record at its start (read after fencing, or by this same argument one restart before).
 * 2. No other owner committed since that run's InitProducerId. A record of the task is written only
 *    in a transaction of its transactional id whose TxnOffsetCommit carries the group's current
 *    generation and a member of it. An owner whose InitProducerId came before the run's is fenced
 *    by it (producer epoch). An owner whose InitProducerId came after it is another member that
 *    started the task from an assignment; it can commit only while it holds the group's current
 *    generation. The member applied every generation from the one that assigned it the task
 *    (`assignedIn`) to its current one, one after the other, never out of the group meanwhile
 *    (`unbrokenSince`, group-membership.ts), and each kept the task here (one that did not revoked
 *    it: a later assignment is a new entry, read afresh): so no other member held the task in any
 *    of those generations. Another member that held it before `assignedIn` and learns a later
 *    generation is told to stop the task before its thread learns that generation (a run told to
 *    stop keeps the generation it had: cluster-task-worker.ts), so its commits carry only
 *    generations before `assignedIn`, which the group refuses by then. (An older Weir under the
 *    legacy transactional id was fenced at the entry's first start, and it too needs a generation.)
 * 3. The member holds a generation newer than the refused commit's (`generation` > `refusedIn`):
 *    the refusal was the group moving on with the task still here, not this member dropped from
 *    the group before it knows (that revokes every task: a new entry).
 */
export function restartCheckpoint(options: {
  /** The refused run's latest committed (or restored) checkpoint, once it stopped; undefined when it did not say (its thread exited). */
  stoppedWith: { latest: TaskCheckpoint | undefined } | undefined;
  /** The generation the refused commit carried. */
  refusedIn: number;
  /** The generation that assigned this member the task (its entry's). */
  assignedIn: number;
  /** The member's generation now, and the first of the generations it applied one after the other up to it. */
  generation: number;
  unbrokenSince: number | undefined;
}): { checkpoint: TaskCheckpoint } | undefined {
  const { stoppedWith, refusedIn, assignedIn, generation, unbrokenSince } = options;
  if (stoppedWith?.latest === undefined) return undefined; // nothing committed nor restored: a fresh task reads (cheap)
  if (unbrokenSince === undefined || unbrokenSince > assignedIn || generation <= refusedIn) return undefined;
  return { checkpoint: stoppedWith.latest };
}
