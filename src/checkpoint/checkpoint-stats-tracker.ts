import { type CheckpointFailure, describeFailureReason } from './checkpoint-failure-reason.ts';

/** One row of the checkpoint history (for the dashboard, the REST API and logs). */
export interface CheckpointStats {
  checkpointId: number;
  kind: 'checkpoint' | 'savepoint';
  status: 'pending' | 'completed' | 'aborted';
  triggeredAt: number;
  durationMs: number | undefined;
  /** The state the tasks acknowledged, in bytes. */
  bytes: number;
  /** The longest barrier alignment of any task. */
  alignmentMs: number;
  /**
   * The longest synchronous part of any task (Flink's sync duration): the task stood still while
   * its snapshot hooks ran and its state backends took their synchronous snapshots. Present once a
   * task reported it.
   */
  syncMs?: number;
  /** The longest asynchronous part of any task (Flink's async duration): state serialized and written while records flowed. */
  asyncMs?: number;
  /** Why it was aborted, in words. */
  reason?: string;
  /** Why it was aborted, for code. */
  failure?: CheckpointFailure;
}

/**
 * Counts over the life of the job (Flink's CheckpointStatsCounts), across its restarts: unlike the
 * history, they are never capped.
 */
export interface CheckpointStatsCounts {
  /** Checkpoints and savepoints triggered. */
  total: number;
  completed: number;
  /** Aborted: expired, declined, subsumed, or given up when an attempt ended. */
  failed: number;
  inProgress: number;
  /** Attempts that started from a checkpoint or savepoint. */
  restored: number;
}

export interface CheckpointStatsListener {
  onCompleted?(stats: CheckpointStats): void;
  onFailed?(stats: CheckpointStats): void;
}

/** How many rows the history keeps. */
export const CHECKPOINT_HISTORY_SIZE = 100;

/**
 * The statistics of a job's checkpoints (Flink's CheckpointStatsTracker): the coordinator reports
 * each checkpoint as it is triggered, acknowledged, completed or aborted; the history keeps the
 * latest {@link CHECKPOINT_HISTORY_SIZE} across restarts of the job, the counts cover all of them
 * (the job master keeps one tracker for the job's life), and the listener hears of each
 * completion and failure (the job master logs them and turns them into job events).
 */
export class CheckpointStatsTracker {
  readonly #history: CheckpointStats[] = [];
  readonly #listener: CheckpointStatsListener;
  /** Ids triggered and not yet completed or aborted (their rows may have left the history). */
  readonly #inProgress = new Set<number>();
  readonly #counts: CheckpointStatsCounts = { total: 0, completed: 0, failed: 0, inProgress: 0, restored: 0 };

  constructor(listener: CheckpointStatsListener = {}) {
    this.#listener = listener;
  }

  reportPending(checkpointId: number, kind: CheckpointStats['kind'], triggeredAt: number): void {
    this.#inProgress.add(checkpointId);
    this.#counts.total++;
    this.#history.push({ checkpointId, kind, status: 'pending', triggeredAt, durationMs: undefined, bytes: 0, alignmentMs: 0 });
    if (this.#history.length > CHECKPOINT_HISTORY_SIZE) this.#history.shift();
  }

  /** A task acknowledged: its bytes add up; its alignment and, when it says, its sync and async durations count if the longest. */
  reportAcknowledged(checkpointId: number, bytes: number, alignmentMs: number, durations?: { syncMs: number; asyncMs: number }): void {
    const stats = this.#row(checkpointId);
    if (stats === undefined) return;
    stats.bytes += bytes;
    stats.alignmentMs = Math.max(stats.alignmentMs, alignmentMs);
    if (durations !== undefined) {
      stats.syncMs = Math.max(stats.syncMs ?? 0, durations.syncMs);
      stats.asyncMs = Math.max(stats.asyncMs ?? 0, durations.asyncMs);
    }
  }

  reportCompleted(checkpointId: number, completedAt: number): void {
    if (this.#inProgress.delete(checkpointId)) this.#counts.completed++;
    const stats = this.#row(checkpointId);
    if (stats === undefined) return;
    stats.status = 'completed';
    stats.durationMs = completedAt - stats.triggeredAt;
    this.#listener.onCompleted?.(stats);
  }

  reportFailed(checkpointId: number, failure: CheckpointFailure, failedAt: number): void {
    if (this.#inProgress.delete(checkpointId)) this.#counts.failed++;
    const stats = this.#row(checkpointId);
    if (stats === undefined) return;
    stats.status = 'aborted';
    stats.durationMs = failedAt - stats.triggeredAt;
    stats.reason = failure.message === '' ? describeFailureReason(failure.reason) : failure.message;
    stats.failure = failure;
    this.#listener.onFailed?.(stats);
  }

  /** An attempt of the job started from a checkpoint or savepoint. */
  reportRestored(): void {
    this.#counts.restored++;
  }

  /** The counts over the job's life (a copy). */
  counts(): CheckpointStatsCounts {
    return { ...this.#counts, inProgress: this.#inProgress.size };
  }

  /** The latest rows, oldest first (copies). */
  history(): CheckpointStats[] {
    return this.#history.map((stats) => ({ ...stats }));
  }

  #row(checkpointId: number): CheckpointStats | undefined {
    for (let i = this.#history.length - 1; i >= 0; i--) {
      const stats = this.#history[i] as CheckpointStats;
      if (stats.checkpointId === checkpointId) return stats;
    }
    return undefined;
  }
}
