import type { CheckpointingConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { OperatorSubtaskState } from './operator-subtask-state.ts';
import type { StopMode } from './stop-mode.ts';
import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import type { CheckpointMetadata, OperatorStateMetadata } from './storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from './storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from './storage/completed-checkpoint-store.ts';

export interface CompletedCheckpoint {
  checkpointId: number;
  kind: 'checkpoint' | 'savepoint';
  location: CheckpointLocation;
  metadata: CheckpointMetadata;
}

/** One row of the checkpoint history (for the dashboard and logs). */
export interface CheckpointStats {
  checkpointId: number;
  kind: 'checkpoint' | 'savepoint';
  status: 'pending' | 'completed' | 'aborted';
  triggeredAt: number;
  durationMs: number | undefined;
  bytes: number;
  alignmentMs: number;
  reason?: string;
}

interface PendingCheckpoint {
  checkpointId: number;
  kind: 'checkpoint' | 'savepoint';
  location: CheckpointLocation;
  triggeredAt: number;
  waitingFor: Set<string>;
  acks: Map<string, { vertexId: number; subtaskIndex: number; operators: OperatorSubtaskState[] }>;
  timeout: NodeJS.Timeout;
  stats: CheckpointStats;
  settle: { resolve: (completed: CompletedCheckpoint) => void; reject: (error: Error) => void };
}

export interface CheckpointCoordinatorOptions {
  config: CheckpointingConfig;
  storage: CheckpointStorage;
  graph: JobGraph;
  /** The first id to use: above every id in the storage, so ids rise across restarts. */
  nextCheckpointId: number;
  /** Sends the trigger to the source tasks; the location says where the state goes and what kind it is. */
  trigger: (location: CheckpointLocation, stop: StopMode | undefined) => void;
  notifyComplete: (checkpointId: number) => void;
  notifyAborted: (checkpointId: number) => void;
  /** More checkpoints failed in a row than the job tolerates. */
  onFailure: (error: WeirError) => void;
  log?: (line: string) => void;
}

const taskKey = (vertexId: number, subtaskIndex: number) => `${vertexId}/${subtaskIndex}`;

/**
 * Flink's CheckpointCoordinator: triggers checkpoints at the sources on the interval (honouring
 * maxConcurrent and minPause), collects every task's acknowledgement, writes the metadata last
 * (the moment the checkpoint exists), subsumes old checkpoints and notifies the tasks. A
 * checkpoint that times out or is declined is aborted; more failures in a row than
 * `tolerableFailures` fail the job.
 */
export class CheckpointCoordinator {
  readonly #options: CheckpointCoordinatorOptions;
  readonly #pending = new Map<number, PendingCheckpoint>();
  readonly history: CheckpointStats[] = [];
  #nextId: number;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #lastTriggerAt = 0;
  #lastCompletionAt = 0;
  #consecutiveFailures = 0;
  latestCompleted: CompletedCheckpoint | undefined;
  #maintenance: Promise<void> = Promise.resolve();

  constructor(options: CheckpointCoordinatorOptions) {
    this.#options = options;
    this.#nextId = options.nextCheckpointId;
  }

  start(): void {
    this.#running = true;
    this.#lastTriggerAt = Date.now();
    this.#scheduleNext();
  }

  /** Stops periodic triggering; pending checkpoints go on. */
  stopPeriodic(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }

  /** Periodic triggering again (after a stop-with-savepoint that was aborted). */
  resumePeriodic(): void {
    if (this.#running) return;
    this.#running = true;
    this.#scheduleNext();
  }

  /** Stops periodic triggering and abandons pending checkpoints (their waiters are rejected). */
  stop(reason = 'the job stopped'): void {
    this.#running = false;
    clearTimeout(this.#timer);
    for (const pending of [...this.#pending.values()]) this.#abort(pending, reason, false);
  }

  /**
   * Triggers a checkpoint or savepoint now (outside the interval) and resolves when it completes.
   * `stop`: a savepoint that stops the job (the sources stop emitting after its barrier).
   */
  triggerNow(kind: 'checkpoint' | 'savepoint', stop?: StopMode): Promise<CompletedCheckpoint> {
    return this.#trigger(kind, stop);
  }

  receiveAck(checkpointId: number, vertexId: number, subtaskIndex: number, operators: OperatorSubtaskState[], alignmentMs: number, bytes: number): void {
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined) return; // late ack of an aborted checkpoint: its folder is discarded
    const key = taskKey(vertexId, subtaskIndex);
    if (!pending.waitingFor.delete(key)) return;
    pending.acks.set(key, { vertexId, subtaskIndex, operators });
    pending.stats.bytes += bytes;
    pending.stats.alignmentMs = Math.max(pending.stats.alignmentMs, alignmentMs);
    if (pending.waitingFor.size === 0) {
      this.#complete(pending).catch((error: unknown) => {
        const reason = `writing its metadata failed: ${error instanceof Error ? error.message : String(error)}`;
        if (this.#pending.has(pending.checkpointId)) this.#abort(pending, reason, true);
        else this.#options.onFailure(new WeirError('CHECKPOINT_FAILED', `${pending.kind} ${pending.checkpointId}: ${reason}`, { fault: 'internal' }));
      });
    }
  }

  receiveDecline(checkpointId: number, task: string, reason: string): void {
    const pending = this.#pending.get(checkpointId);
    if (pending !== undefined) this.#abort(pending, `declined by ${task}: ${reason}`, true);
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Deletions of old and aborted checkpoints, one at a time (two at once trip over each other's
   * folders). A failure there never fails the job: it is logged and the next subsume tries again.
   */
  #housekeeping(what: string, work: () => Promise<unknown>): void {
    this.#maintenance = this.#maintenance.then(work).then(
      () => {},
      (error: unknown) => this.#options.log?.(`checkpoint storage: ${what} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  /** Resolves when the queued deletions are done. */
  async settled(): Promise<void> {
    await this.#maintenance;
  }

  /** The tasks a pending checkpoint still waits for, by name. */
  #describeWaiting(pending: PendingCheckpoint): string {
    const { graph } = this.#options;
    return [...pending.waitingFor]
      .map((key) => {
        const [vertexId, subtask] = key.split('/').map(Number) as [number, number];
        const vertex = graph.vertices[vertexId];
        return `${vertex?.name ?? `vertex ${vertexId}`} (${subtask + 1}/${vertex?.parallelism ?? '?'})`;
      })
      .join(', ');
  }

  #scheduleNext(): void {
    clearTimeout(this.#timer);
    if (!this.#running) return;
    const { interval, minPause, maxConcurrent } = this.#options.config;
    if (this.#pending.size >= maxConcurrent) return; // rescheduled when one ends
    const now = Date.now();
    const due = Math.max(this.#lastTriggerAt + interval, this.#lastCompletionAt + minPause);
    this.#timer = setTimeout(
      () => {
        if (!this.#running || this.#pending.size >= maxConcurrent) return;
        this.#trigger('checkpoint').catch(() => {}); // failures are counted in #abort
      },
      Math.max(0, due - now),
    );
  }

  #trigger(kind: 'checkpoint' | 'savepoint', stop?: StopMode): Promise<CompletedCheckpoint> {
    const { storage, graph, config } = this.#options;
    const checkpointId = this.#nextId++;
    const location = kind === 'savepoint' ? storage.savepointLocation(checkpointId) : storage.checkpointLocation(checkpointId);
    const waitingFor = new Set<string>();
    for (const vertex of graph.vertices) for (let i = 0; i < vertex.parallelism; i++) waitingFor.add(taskKey(vertex.id, i));
    this.#lastTriggerAt = Date.now();
    const stats: CheckpointStats = { checkpointId, kind, status: 'pending', triggeredAt: this.#lastTriggerAt, durationMs: undefined, bytes: 0, alignmentMs: 0 };
    this.history.push(stats);
    if (this.history.length > 100) this.history.shift();
    const promise = new Promise<CompletedCheckpoint>((resolve, reject) => {
      const pending: PendingCheckpoint = {
        checkpointId,
        kind,
        location,
        triggeredAt: this.#lastTriggerAt,
        waitingFor,
        acks: new Map(),
        timeout: setTimeout(
          () =>
            this.#abort(
              pending,
              `it did not complete within checkpointing.timeout (${config.timeout} ms); no acknowledgement from ${this.#describeWaiting(pending)}`,
              true,
            ),
          config.timeout,
        ),
        stats,
        settle: { resolve, reject },
      };
      this.#pending.set(checkpointId, pending);
    });
    this.#options.trigger(location, stop);
    this.#scheduleNext();
    return promise;
  }

  async #complete(pending: PendingCheckpoint): Promise<void> {
    const { storage, graph, config } = this.#options;
    const operators: OperatorStateMetadata[] = graph.nodes.map((node) => {
      const vertex = graph.vertices.find((candidate) => candidate.nodeIds.includes(node.id));
      const subtasks = [...pending.acks.values()]
        .filter((ack) => ack.vertexId === vertex?.id)
        .map((ack) => {
          const operator = ack.operators.find((entry) => entry.uid === node.uid);
          return {
            subtaskIndex: ack.subtaskIndex,
            ...(operator?.keyed === undefined ? {} : { keyed: operator.keyed }),
            ...(operator?.operator === undefined ? {} : { operator: operator.operator }),
          };
        })
        .sort((a, b) => a.subtaskIndex - b.subtaskIndex);
      return { uid: node.uid, name: node.name, parallelism: vertex?.parallelism ?? 1, subtasks };
    });
    const metadata: CheckpointMetadata = {
      version: 1,
      kind: pending.kind,
      jobName: graph.jobName,
      checkpointId: pending.checkpointId,
      triggeredAt: pending.triggeredAt,
      completedAt: Date.now(),
      maxParallelism: graph.maxParallelism,
      operators,
      properties: {},
    };
    await storage.commitMetadata(pending.location, metadata);
    if (!this.#pending.has(pending.checkpointId)) {
      // Aborted (timed out) while its metadata was written: it must not stay on disk as completed.
      this.#housekeeping(`discarding ${pending.kind} ${pending.checkpointId}`, () => storage.discard(pending.location));
      return;
    }
    clearTimeout(pending.timeout);
    this.#pending.delete(pending.checkpointId);
    this.#consecutiveFailures = 0;
    this.#lastCompletionAt = Date.now();
    pending.stats.status = 'completed';
    pending.stats.durationMs = this.#lastCompletionAt - pending.triggeredAt;
    const completed: CompletedCheckpoint = { checkpointId: pending.checkpointId, kind: pending.kind, location: pending.location, metadata };
    // A restart restores the latest completed snapshot, savepoints included: a savepoint's
    // transactions are committed, so restoring an older checkpoint would commit its records twice.
    if (this.latestCompleted === undefined || completed.checkpointId > this.latestCompleted.checkpointId) this.latestCompleted = completed;
    if (pending.kind === 'checkpoint') {
      // Checkpoints below this one are subsumed; pending ones below it can never be needed.
      for (const older of [...this.#pending.values()]) {
        if (older.checkpointId < pending.checkpointId && older.kind === 'checkpoint')
          this.#abort(older, `subsumed by checkpoint ${pending.checkpointId}`, false);
      }
    }
    // The checkpoint exists from its metadata on: tell the tasks before any housekeeping.
    this.#options.notifyComplete(pending.checkpointId);
    pending.settle.resolve(completed);
    if (pending.kind === 'checkpoint')
      this.#housekeeping(`subsuming checkpoints below ${pending.checkpointId}`, () => new CompletedCheckpointStore(storage).subsume(config.retained));
    this.#scheduleNext();
  }

  #abort(pending: PendingCheckpoint, reason: string, countsAsFailure: boolean): void {
    if (!this.#pending.delete(pending.checkpointId)) return;
    clearTimeout(pending.timeout);
    pending.stats.status = 'aborted';
    pending.stats.durationMs = Date.now() - pending.triggeredAt;
    pending.stats.reason = reason;
    const error = new WeirError('CHECKPOINT_ABORTED', `${pending.kind} ${pending.checkpointId} was aborted: ${reason}`, { fault: 'external', retriable: true });
    pending.settle.reject(error);
    this.#options.notifyAborted(pending.checkpointId);
    this.#housekeeping(`discarding ${pending.kind} ${pending.checkpointId}`, () => this.#options.storage.discard(pending.location));
    if (countsAsFailure) {
      this.#consecutiveFailures++;
      const tolerable = this.#options.config.tolerableFailures;
      if (this.#consecutiveFailures > tolerable) {
        this.#options.onFailure(
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
    this.#lastCompletionAt = Date.now();
    this.#scheduleNext();
  }
}
