/**
 * Why a checkpoint did not complete (Flink's CheckpointFailureReason, the reasons Weir has). The
 * coordinator decides by the reason whether a failure counts toward
 * `checkpointing.tolerableFailures`: only failures of the checkpoint itself do (it expired, a task
 * could not snapshot or write its state, the metadata could not be written), never one that a
 * newer checkpoint made moot or that the job's own stop or failover caused. As in Flink's
 * CheckpointFailureManager.
 */
export type CheckpointFailureReason =
  | 'CHECKPOINT_EXPIRED'
  | 'CHECKPOINT_DECLINED'
  | 'CHECKPOINT_DECLINED_TASK_NOT_READY'
  | 'CHECKPOINT_ASYNC_EXCEPTION'
  | 'FINALIZE_CHECKPOINT_FAILURE'
  | 'CHECKPOINT_SUBSUMED'
  | 'CHECKPOINT_DECLINED_SUBSUMED'
  | 'CHECKPOINT_COORDINATOR_SHUTDOWN'
  | 'JOB_FAILOVER';

interface ReasonInfo {
  /** What happened, as logs and the dashboard say it. */
  message: string;
  /** Whether it counts toward checkpointing.tolerableFailures. */
  counts: boolean;
}

const REASONS: Record<CheckpointFailureReason, ReasonInfo> = {
  CHECKPOINT_EXPIRED: { message: 'it expired before completing', counts: true },
  CHECKPOINT_DECLINED: { message: 'a task declined it: its snapshot failed', counts: true },
  CHECKPOINT_DECLINED_TASK_NOT_READY: { message: 'a source was not ready for it (in the middle of what a checkpoint cannot hold)', counts: false },
  CHECKPOINT_ASYNC_EXCEPTION: { message: 'a task could not write its state', counts: true },
  FINALIZE_CHECKPOINT_FAILURE: { message: 'its metadata could not be written', counts: true },
  CHECKPOINT_SUBSUMED: { message: 'a newer checkpoint completed first', counts: false },
  CHECKPOINT_DECLINED_SUBSUMED: { message: 'a task received the barrier of a newer checkpoint while aligning this one', counts: false },
  CHECKPOINT_COORDINATOR_SHUTDOWN: { message: 'the job stopped', counts: false },
  JOB_FAILOVER: { message: 'the job failed and restarts', counts: false },
};

/** Whether a checkpoint that failed for this reason counts toward checkpointing.tolerableFailures. */
export function countsTowardTolerableFailures(reason: CheckpointFailureReason): boolean {
  return REASONS[reason].counts;
}

/** The reason in words. */
export function describeFailureReason(reason: CheckpointFailureReason): string {
  return REASONS[reason].message;
}

/** Why a checkpoint failed: the reason, and what exactly happened. */
export interface CheckpointFailure {
  reason: CheckpointFailureReason;
  /** The details: the task and its error, the timeout, the checkpoint that subsumed it. */
  message: string;
}
