import type { CheckpointingConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { type CheckpointFailure, type CheckpointFailureReason, countsTowardTolerableFailures, describeFailureReason } from './checkpoint-failure-reason.ts';
import type { CheckpointStatsTracker } from './checkpoint-stats-tracker.ts';
import { CheckpointsCleaner } from './checkpoints-cleaner.ts';
import type { CompletedCheckpoint } from './completed-checkpoint.ts';
import type { OperatorSubtaskState } from './operator-subtask-state.ts';
import { PendingCheckpoint, type TaskId, tasksOf } from './pending-checkpoint.ts';
import type { StopMode } from './stop-mode.ts';
import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import type { CheckpointStorage } from './storage/checkpoint-storage.ts';

/** The running attempt's tasks, as the coordinator reaches them. */
export interface CheckpointTaskGateway {
  /** Sends the trigger to the source tasks; the location says where the state goes and what kind it is. */
  triggerCheckpoint(location: CheckpointLocation, stop: StopMode | undefined): void;
  notifyCheckpointComplete(checkpointId: number): void;
  notifyCheckpointAborted(checkpointId: number): void;
  /** More checkpoints failed in a row than the job tolerates: the attempt fails. */
  failJob(error: WeirError): void;
}

export interface CheckpointCoordinatorOptions {
  config: CheckpointingConfig;
  storage: CheckpointStorage;
  graph: JobGraph;
  /** The first id to use: above every id in the storage and the restored one, so ids rise across runs. */
  firstCheckpointId: number;
  stats: CheckpointStatsTracker;
  log?: (line: string) => void;
  /** The first back-off of a retried discard (doubling); tests make it short. */
  retryDelayMs?: number;
  /**
   * The completed checkpoint of this storage the job starts from (not a savepoint): incremental
   * checkpoints add to it until one of this run completes (a task restored at the same key groups
   * goes on with its chain; any other writes a full snapshot).
   */
  restoredCheckpointId?: number | undefined;
}

/** Which tasks have acted on "checkpoint N complete" (their sinks committed what N holds), and who waits for all of them. */
interface CommitTracking {
  notified: Set<string>;
  waiters: { resolve: () => void; reject: (error: Error) => void }[];
}

/** How soon after an attempt's tasks run its first checkpoint is triggered (at most the interval). */
export const FIRST_CHECKPOINT_DELAY_MS = 100;

/** How many completed checkpoints keep their notification tracking (a waiter asks right after completion). */
const TRACKED_COMMITS = 16;

/**
 * Flink's CheckpointCoordinator, one per job for the life of the job: triggers checkpoints at the
 * sources on the interval (honouring maxConcurrent and minPause), collects every task's
 * acknowledgement, writes the metadata last (the moment the checkpoint exists), subsumes old
 * checkpoints and notifies the tasks. It keeps the one ledger of the job's checkpoints: the pending
 * ones, the latest completed one, which tasks have acted on each completion, and the next id
 * (rising across restarts of the job). A checkpoint that expires or is declined is aborted; more
 * failures in a row than `tolerableFailures` fail the job, counting only the reasons that are the
 * checkpoint's own fault ({@link countsTowardTolerableFailures}) and only for checkpoints, never
 * savepoints (their caller hears of the failure), as in Flink.
 *
 * Each execution attempt of the job attaches its tasks ({@link attach}) and detaches them when it
 * ends; in between, nothing can be triggered.
 */
export class CheckpointCoordinator {
  readonly #options: CheckpointCoordinatorOptions;
  readonly #tasks: TaskId[];
  readonly #cleaner: CheckpointsCleaner;
  readonly #completing = new Set<Promise<void>>();
  readonly #pending = new Map<number, PendingCheckpoint>();
  readonly #commits = new Map<number, CommitTracking>();
  /** Checkpoints that completed: an error after their metadata is written is the job's, not theirs. */
  readonly #completed = new WeakSet<PendingCheckpoint>();
  #gateway: CheckpointTaskGateway | undefined;
  #latestCompleted: CompletedCheckpoint | undefined;
  /** The latest checkpoint (not savepoint) completed by this coordinator: what incremental snapshots add to. */
  #latestCompletedCheckpointId: number | undefined;
  #nextId: number;
  #periodic = false;
  #timer: NodeJS.Timeout | undefined;
  #lastTriggerAt = 0;
  #lastCompletionAt = 0;
  #consecutiveFailures = 0;

  constructor(options: CheckpointCoordinatorOptions) {
    this.#options = options;
    this.#tasks = tasksOf(options.graph);
    this.#nextId = options.firstCheckpointId;
    this.#latestCompletedCheckpointId = options.restoredCheckpointId;
    this.#cleaner = new CheckpointsCleaner(options.storage, options.log ?? (() => {}), options.retryDelayMs);
  }

  /** The latest checkpoint or savepoint completed in this job's life (a restart restores it). */
  get latestCompleted(): CompletedCheckpoint | undefined {
    return this.#latestCompleted;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * An attempt's tasks run: checkpoints can be triggered. The first one comes
   * {@link FIRST_CHECKPOINT_DELAY_MS} from now (or the interval, if shorter), not a whole interval:
   * what a restarted job read since its restore becomes visible within a second of its start.
   */
  attach(gateway: CheckpointTaskGateway): void {
    this.#gateway = gateway;
    const { interval } = this.#options.config;
    this.#lastTriggerAt = Date.now() - interval + Math.min(interval, FIRST_CHECKPOINT_DELAY_MS);
    this.#consecutiveFailures = 0;
  }

  /**
   * The attempt ended: the scheduler stops, pending checkpoints are aborted (`reason`), and whoever
   * waits for a completion's commits hears `error` (the tasks that would have acted on it are gone).
   */
  detach(reason: CheckpointFailureReason, error: Error): void {
    this.stopCheckpointScheduler();
    this.abortPendingCheckpoints(reason, describeFailureReason(reason));
    this.#gateway = undefined;
    for (const tracking of this.#commits.values()) for (const waiter of tracking.waiters) waiter.reject(error);
    this.#commits.clear();
  }

  /**
   * Periodic checkpoints on (again, after a stop-with-savepoint that was aborted). Called when
   * they are on already (an attempt's tasks run after the scheduler was turned on while none were
   * attached), it schedules the next one from now.
   */
  startCheckpointScheduler(): void {
    this.#periodic = true;
    this.#scheduleNext();
  }

  /** Periodic checkpoints off; pending ones go on. */
  stopCheckpointScheduler(): void {
    this.#periodic = false;
    clearTimeout(this.#timer);
  }

  /** Aborts every pending checkpoint (their waiters are rejected); not counted as failures unless the reason counts. */
  abortPendingCheckpoints(reason: CheckpointFailureReason, message: string): void {
    for (const pending of [...this.#pending.values()]) this.#abort(pending, { reason, message });
  }

  /**
   * Triggers a checkpoint or savepoint now (outside the interval) and resolves when it completes.
   * `stop`: a savepoint that stops the job (the sources stop emitting after its barrier).
   */
  triggerCheckpoint(kind: 'checkpoint' | 'savepoint', stop?: StopMode): Promise<CompletedCheckpoint> {
    if (this.#gateway === undefined) {
      return Promise.reject(
        new WeirError('JOB_NOT_RUNNING', `cannot take a ${kind} now: the job's tasks are not running (it is starting, restarting or ending)`, {
          hint: 'try again once the job runs (GET /api/job says state "running")',
          retriable: true,
        }),
      );
    }
    return this.#trigger(kind, stop);
  }

  receiveAcknowledge(
    checkpointId: number,
    task: TaskId,
    operators: OperatorSubtaskState[],
    alignmentMs: number,
    bytes: number,
    durations?: { syncMs: number; asyncMs: number },
  ): void {
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined) return; // a late acknowledgement of an aborted checkpoint: its location is discarded
    if (!pending.acknowledge(task, operators)) return;
    this.#options.stats.reportAcknowledged(checkpointId, bytes, alignmentMs, durations);
    if (!pending.isFullyAcknowledged) return;
    const completing = this.#complete(pending).catch((error: unknown) => {
      const message = `writing its metadata failed: ${error instanceof Error ? error.message : String(error)}`;
      if (this.#pending.has(pending.checkpointId)) this.#abort(pending, { reason: 'FINALIZE_CHECKPOINT_FAILURE', message });
      else if (this.#completed.has(pending)) {
        // It completed, and what came after the metadata failed: the job cannot go on as if nothing happened.
        this.#gateway?.failJob(new WeirError('CHECKPOINT_FAILED', `${pending.kind} ${pending.checkpointId}: ${message}`, { fault: 'internal' }));
      } else {
        // Aborted (expired, or its attempt ended) while its metadata was written: already given up, and cleaned up.
        this.#options.log?.(`${pending.kind} ${pending.checkpointId}: ${message} (it had already been aborted)`);
      }
    });
    this.#completing.add(completing);
    void completing.finally(() => this.#completing.delete(completing));
  }

  receiveDecline(checkpointId: number, task: TaskId, failure: CheckpointFailure): void {
    const pending = this.#pending.get(checkpointId);
    if (pending !== undefined) this.#abort(pending, { reason: failure.reason, message: `declined by ${this.#describe(task)}: ${failure.message}` });
  }

  /** A task has acted on "checkpoint N complete" (its two-phase-commit sinks have committed up to N). */
  receiveNotified(checkpointId: number, task: TaskId): void {
    const tracking = this.#commits.get(checkpointId);
    if (tracking === undefined) return;
    tracking.notified.add(`${task.vertexId}/${task.subtaskIndex}`);
    if (tracking.notified.size < this.#tasks.length) return;
    for (const waiter of tracking.waiters.splice(0)) waiter.resolve();
  }

  /** Resolves once every task has acted on the completion of `checkpointId` (its sinks have committed it). */
  whenCommitted(checkpointId: number): Promise<void> {
    const tracking = this.#commits.get(checkpointId);
    if (tracking === undefined) {
      return Promise.reject(
        new WeirError('CHECKPOINT_NOT_TRACKED', `checkpoint ${checkpointId} is not a recent completed checkpoint of this run`, { fault: 'internal' }),
      );
    }
    if (tracking.notified.size === this.#tasks.length) return Promise.resolve();
    return new Promise((resolve, reject) => tracking.waiters.push({ resolve, reject }));
  }

  /**
   * Resolves when the completions in flight (metadata being written) and the queued deletions of
   * old and aborted checkpoints are done: then `latestCompleted` is what a start would restore.
   */
  async settled(): Promise<void> {
    await Promise.all([...this.#completing]);
    await this.#cleaner.settled();
  }

  #scheduleNext(): void {
    clearTimeout(this.#timer);
    if (!this.#periodic) return;
    const { interval, minPause, maxConcurrent } = this.#options.config;
    if (this.#pending.size >= maxConcurrent) return; // rescheduled when one ends
    const due = Math.max(this.#lastTriggerAt + interval, this.#lastCompletionAt + minPause);
    this.#timer = setTimeout(
      () => {
        if (!this.#periodic || this.#gateway === undefined || this.#pending.size >= maxConcurrent) return;
        this.#trigger('checkpoint').catch(() => {}); // failures are counted in #abort
      },
      Math.max(0, due - Date.now()),
    );
  }

  #trigger(kind: 'checkpoint' | 'savepoint', stop?: StopMode): Promise<CompletedCheckpoint> {
    const { storage, config, stats } = this.#options;
    const checkpointId = this.#nextId++;
    const location = kind === 'savepoint' ? storage.savepointLocation(checkpointId) : storage.checkpointLocation(checkpointId);
    if (kind === 'checkpoint' && config.incremental === true && this.#latestCompletedCheckpointId !== undefined) {
      location.incrementalBase = this.#latestCompletedCheckpointId;
    }
    this.#lastTriggerAt = Date.now();
    const pending = new PendingCheckpoint({ checkpointId, location, triggeredAt: this.#lastTriggerAt, tasks: this.#tasks });
    this.#pending.set(checkpointId, pending);
    stats.reportPending(checkpointId, kind, pending.triggeredAt);
    pending.expireAfter(config.timeout, () => {
      const waiting = pending
        .notYetAcknowledged()
        .map((task) => this.#describe(task))
        .join(', ');
      this.#abort(pending, {
        reason: 'CHECKPOINT_EXPIRED',
        message: `it did not complete within checkpointing.timeout (${config.timeout} ms); no acknowledgement from ${waiting}`,
      });
    });
    this.#gateway?.triggerCheckpoint(location, stop);
    this.#scheduleNext();
    return pending.promise;
  }

  async #complete(pending: PendingCheckpoint): Promise<void> {
    const { storage, graph, config, stats } = this.#options;
    const metadata = pending.finalize(graph, Date.now());
    try {
      await storage.commitMetadata(pending.location, metadata);
    } catch (error) {
      // Aborted meanwhile, its folder discarded under the write: whatever the write left goes too.
      if (!this.#pending.has(pending.checkpointId)) this.#cleaner.discardAborted(pending.location);
      throw error;
    }
    if (!this.#pending.has(pending.checkpointId)) {
      // Aborted (expired) while its metadata was written: it must not stay behind as completed.
      this.#cleaner.discardAborted(pending.location);
      return;
    }
    this.#pending.delete(pending.checkpointId);
    this.#completed.add(pending);
    this.#consecutiveFailures = 0;
    this.#lastCompletionAt = Date.now();
    const completed: CompletedCheckpoint = { checkpointId: pending.checkpointId, kind: pending.kind, location: pending.location, metadata };
    // A restart restores the latest completed snapshot, savepoints included: a savepoint's
    // transactions are committed, so restoring an older checkpoint would commit its records twice.
    if (this.#latestCompleted === undefined || completed.checkpointId > this.#latestCompleted.checkpointId) this.#latestCompleted = completed;
    if (pending.kind === 'checkpoint') {
      this.#latestCompletedCheckpointId = pending.checkpointId;
      // Checkpoints below this one are subsumed; pending ones below it can never be needed.
      for (const older of [...this.#pending.values()]) {
        if (older.checkpointId < pending.checkpointId && older.kind === 'checkpoint') {
          this.#abort(older, { reason: 'CHECKPOINT_SUBSUMED', message: `subsumed by checkpoint ${pending.checkpointId}` });
        }
      }
    }
    this.#trackCommits(completed.checkpointId);
    // The checkpoint exists from its metadata on: tell the tasks before any housekeeping.
    this.#gateway?.notifyCheckpointComplete(pending.checkpointId);
    stats.reportCompleted(pending.checkpointId, this.#lastCompletionAt);
    pending.complete(completed);
    if (pending.kind === 'checkpoint') this.#cleaner.subsume(pending.checkpointId, config.retained);
    this.#scheduleNext();
  }

  #trackCommits(checkpointId: number): void {
    this.#commits.set(checkpointId, { notified: new Set(), waiters: [] });
    for (const [id, tracking] of this.#commits) {
      if (id <= checkpointId - TRACKED_COMMITS && tracking.waiters.length === 0) this.#commits.delete(id);
    }
  }

  #abort(pending: PendingCheckpoint, failure: CheckpointFailure): void {
    if (!this.#pending.delete(pending.checkpointId)) return;
    const now = Date.now();
    const error = new WeirError('CHECKPOINT_ABORTED', `${pending.kind} ${pending.checkpointId} was aborted: ${failure.message}`, {
      fault: 'external',
      retriable: true,
    });
    this.#options.stats.reportFailed(pending.checkpointId, failure, now);
    pending.abort(error);
    this.#gateway?.notifyCheckpointAborted(pending.checkpointId);
    this.#cleaner.discard(pending.location);
    if (pending.kind === 'checkpoint' && countsTowardTolerableFailures(failure.reason)) {
      this.#consecutiveFailures++;
      const tolerable = this.#options.config.tolerableFailures;
      if (this.#consecutiveFailures > tolerable) {
        this.#gateway?.failJob(
          new WeirError(
            'TOO_MANY_CHECKPOINT_FAILURES',
            `${this.#consecutiveFailures} checkpoints failed in a row, more than checkpointing.tolerableFailures (${tolerable}); the last: ${error.message}`,
            {
              hint: 'look at why they fail (timeout, declines); raise checkpointing.timeout or checkpointing.tolerableFailures if the cause is passing',
              fault: 'external',
              retriable: true,
            },
          ),
        );
      }
    }
    this.#lastCompletionAt = now;
    this.#scheduleNext();
  }

  /** A task by name, as errors show it: `map -> sink (2/4)`. */
  #describe(task: TaskId): string {
    const vertex = this.#options.graph.vertices[task.vertexId];
    return `${vertex?.name ?? `vertex ${task.vertexId}`} (${task.subtaskIndex + 1}/${vertex?.parallelism ?? '?'})`;
  }
}
