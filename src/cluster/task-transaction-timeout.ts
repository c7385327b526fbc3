import { WeirError } from '../core/errors/weir-error.ts';

/**
 * How long a cluster task's Kafka transaction may stay open (its transaction.timeout.ms): from its
 * first record through the checkpoint's barrier, the state upload to the checkpoint storage and the
 * commit. The broker aborts a transaction open longer, so the timeout is long (10 checkpoint
 * intervals, at least 60 s) within the brokers' transaction.max.timeout.ms.
 */
export function taskTransactionTimeoutMs(brokerMaxMs: number, intervalMs: number): number {
  return Math.min(brokerMaxMs, Math.max(60_000, 10 * intervalMs));
}

/** The setting behind a task's transaction timeout, for the messages that name it. */
export function describeTaskTransactionTimeout(timeoutMs: number): string {
  return `the task transaction timeout ${timeoutMs} ms (min(the brokers' transaction.max.timeout.ms, max(60 s, 10 x checkpointing.interval)))`;
}

/**
 * How long a task's transaction may be open when its checkpoint's state upload is still under way
 * before the task gives the checkpoint up itself: three quarters of the transaction timeout, so
 * the abort is the task's, said and logged, and the commit keeps a quarter of the timeout.
 */
export function openTransactionBudgetMs(timeoutMs: number): number {
  return Math.floor(timeoutMs * 0.75);
}

/**
 * The timeout of the read_committed read of the checkpoint topic when tasks start. It waits behind
 * the last stable offset, which other tasks' open transactions hold back for as long as they may
 * legally stay open: up to the transaction timeout, then the broker's abort of a timed-out
 * transaction (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s by default). So
 * it is the transaction timeout and a minute, and never under two minutes.
 */
export function restoreReadTimeoutMs(timeoutMs: number): number {
  return Math.max(120_000, timeoutMs + 60_000);
}

/** A task gave its checkpoint up: its transaction has been open too close to the transaction timeout while the checkpoint's snapshot or state upload is still under way. */
export function uploadTooSlow(task: string, checkpointId: number | undefined, openMs: number, timeoutMs: number): WeirError {
  return new WeirError(
    'TASK_TRANSACTION_TIMED_OUT',
    `${task}: its transaction has been open ${openMs} ms and ${checkpointId === undefined ? 'its checkpoint' : `checkpoint ${checkpointId}`} has not reached its commit (the snapshot or the upload of the state to the checkpoint storage is still under way); ` +
      `${describeTaskTransactionTimeout(timeoutMs)} would run out and the broker abort the transaction: the task aborts it itself and starts again from its latest checkpoint`,
    {
      hint: 'make checkpoints faster (less state per task, faster checkpoint storage), or raise transaction.max.timeout.ms on the brokers (the task transaction timeout is at most that)',
      fault: 'external',
    },
  );
}

/** A task's transaction was aborted by the broker after the transaction timeout (its next request was answered "fenced"), while the task is still this member's. */
export function timedOutByBroker(task: string, timeoutMs: number, cause: unknown): WeirError {
  return new WeirError(
    'TASK_TRANSACTION_TIMED_OUT',
    `${task}: the broker aborted its transaction after ${describeTaskTransactionTimeout(timeoutMs)} and answered it as fenced; ` +
      "the task is still this member's in the group's current generation, so it starts again from its latest checkpoint (the aborted transaction's work is redone, none of it visible)",
    {
      hint: 'a checkpoint (its state upload or its commit) or a pause of the process took longer than the transaction timeout: make checkpoints faster, or raise transaction.max.timeout.ms on the brokers',
      fault: 'external',
      cause,
    },
  );
}

/**
 * A task's transaction lives one checkpoint interval plus its state upload and commit; the broker
 * aborts any older than its transaction timeout (at most transaction.max.timeout.ms), which would
 * lose that checkpoint's work: an interval the timeout cannot cover three times over is refused.
 * A state upload that would outlast it is bounded by the task (task-output.ts).
 */
export function refuseShortTransactionTimeout(brokerMaxMs: number, intervalMs: number, timeoutMs: number): WeirError | undefined {
  if (timeoutMs >= 3 * intervalMs) return undefined;
  return new WeirError(
    'TRANSACTION_TIMEOUT_REFUSED',
    `cluster mode: checkpointing.interval ${intervalMs} ms is too long for the brokers' transaction.max.timeout.ms ${brokerMaxMs} ms: a task's transaction stays open for an interval, and the broker would abort it`,
    {
      hint: `set checkpointing.interval (--checkpoint-interval) to at most ${Math.floor(brokerMaxMs / 3)} ms, or raise transaction.max.timeout.ms on the brokers`,
    },
  );
}
