import { setTimeout as sleep } from 'node:timers/promises';
import { CheckpointCoordinator } from '../../checkpoint/checkpoint-coordinator.ts';
import { CheckpointStatsTracker } from '../../checkpoint/checkpoint-stats-tracker.ts';
import type { CompletedCheckpoint } from '../../checkpoint/completed-checkpoint.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../checkpoint/storage/completed-checkpoint-store.ts';
import { LocalRecoveryStorage, withLocalRecovery } from '../../checkpoint/storage/local-recovery-storage.ts';
import { openCheckpointStorage } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { releaseOnExit } from '../../checkpoint/storage/storage-lock.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type Logger, toLogger } from '../../core/logging/logger.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';
import { isCheckpointOf, type RestoreInfo } from '../deployment/restore-info.ts';
import { JobMetrics } from '../metrics/job-metrics.ts';
import { CheckpointLogSummary, throughputOf } from './checkpoint-log-summary.ts';
import { CommittedCheckpointRecorder } from './committed-checkpoint-recorder.ts';
import { ExecutionAttempt } from './execution-attempt.ts';
import type { JobClient, JobResult, JobStatus, RunJobOptions } from './job-client.ts';
import { loadJob } from './load-job.ts';
import { failedForGood, neverRestarts, RestartStrategy } from './restart-strategy.ts';
import { restoreName } from './restore-name.ts';
import { findRestorePoint, restoreAfterFailure, supersededRestoreWarning } from './restore-point.ts';
import { enforcePreflight, runPreflight } from './run-preflight.ts';
import { finishSinksAtJobEnd } from './sink-job-end.ts';

export type { JobClient, JobEvent, JobResult, JobStatus, RunJobOptions } from './job-client.ts';

/**
 * Loads and starts a job (Flink's JobMaster): plans it, checks it (the preflight), finds where it
 * resumes, and runs it, restarting it from its latest completed checkpoint when a task fails, as
 * the restart strategy allows. A new process on the same checkpoint storage resumes from its latest
 * completed snapshot.
 */
export async function startJob(options: RunJobOptions): Promise<JobClient> {
  const logger = toLogger(options.log);
  const log = (line: string) => logger.info(line);
  const { url, job, config, streamGraph, graph } = await loadJob(options);

  const storage =
    config.checkpointing === undefined ? undefined : withLocalRecovery(openCheckpointStorage(config.checkpointing.storage), config, graph.jobName);
  await storage?.initialize();
  // One process per checkpoint folder, taken before anything looks at the brokers: a second run of
  // the job is told so at once. The lock goes once the job and its sinks' end are done (or at exit).
  let master: JobMaster | undefined;
  const lock = await storage?.lock({ log, onLost: (why) => master?.loseLock(why) });
  const forgetOnExit = lock === undefined ? undefined : releaseOnExit(lock);
  const release = () => {
    lock?.release();
    forgetOnExit?.();
  };
  try {
    // Copies of checkpoints this storage no longer holds (local recovery) are of no use: gone once the lock is ours.
    if (storage instanceof LocalRecoveryStorage) await storage.pruneCopies();
    enforcePreflight(await runPreflight(job.name, streamGraph, graph, config, { predecessorGone: lock?.tookOverFrom }), (line) => logger.warn(line));
    const restore = await findRestorePoint(graph, storage, options);
    const superseded = restore === undefined ? undefined : supersededRestoreWarning(restore);
    if (superseded !== undefined) logger.warn(superseded);
    const highest = storage === undefined ? 0 : await new CompletedCheckpointStore(storage).highestCheckpointId();
    const firstCheckpointId = Math.max(highest, restore?.checkpointId ?? 0) + 1;
    master = new JobMaster({ ...options, log, logger }, url, config, streamGraph, graph, storage, restore, firstCheckpointId);
    const ended = master.ended;
    // Released only when the sinks' end has settled too, even past its wait: until then it may still
    // act on the job's transactions, and a new owner must not be writing under them.
    ended.then(release, release);
    return master.client();
  } catch (error) {
    options.warmWorkers?.close();
    release();
    throw error;
  }
}

/** Runs a job to its end (bounded jobs) or until it fails for good. */
export async function runJob(options: RunJobOptions): Promise<JobResult> {
  return (await startJob(options)).result;
}

/** The job master's own parts: the attempts, the coordinator and its statistics, the restarts. */
class JobMaster {
  readonly #options: RunJobOptions & { log: (line: string) => void; logger: Logger };
  readonly #url: string;
  readonly #config: EnvironmentConfig;
  readonly #streamGraph: StreamGraph;
  readonly #graph: JobGraph;
  readonly #storage: CheckpointStorage | undefined;
  readonly #coordinator: CheckpointCoordinator | undefined;
  /** Records which checkpoints' transactions are committed, so a restore of one does not commit them again. */
  readonly #committed: CommittedCheckpointRecorder | undefined;
  readonly #stats: CheckpointStatsTracker;
  readonly #metrics = new JobMetrics();
  readonly #restartLog: JobStatus['restarts'] = [];
  readonly #result: Promise<JobResult>;
  #restore: RestoreInfo | undefined;
  /** The latest failure of an attempt, as /api/job shows it. */
  #failure: JobStatus['failure'];
  #state: JobStatus['state'] = 'starting';
  #current: ExecutionAttempt | undefined;
  #stopRequested = false;
  #cancelled = false;
  /** Savepoints asked for before the tasks run, waiting for them. */
  readonly #runningWaiters = new Set<{ resolve: () => void; reject: (error: Error) => void }>();
  /** Ends a restart wait early when the job is cancelled. */
  readonly #cancelWait = new AbortController();
  #lockLost = false;
  #endSettled!: (sinks: Promise<void> | undefined) => void;
  readonly #ended = new Promise<void>((resolve) => {
    this.#endSettled = (sinks) => void (sinks ?? Promise.resolve()).then(resolve, resolve);
  });

  constructor(
    options: RunJobOptions & { log: (line: string) => void; logger: Logger },
    url: string,
    config: EnvironmentConfig,
    streamGraph: StreamGraph,
    graph: JobGraph,
    storage: CheckpointStorage | undefined,
    restore: RestoreInfo | undefined,
    firstCheckpointId: number,
  ) {
    this.#options = options;
    this.#url = url;
    this.#config = config;
    this.#streamGraph = streamGraph;
    this.#graph = graph;
    this.#storage = storage;
    this.#restore = restore;
    const { onEvent } = options;
    const summary = new CheckpointLogSummary(options.logger, options.logSummaryIntervalMs, () => throughputOf(graph, this.#metrics));
    this.#stats = new CheckpointStatsTracker({
      onCompleted: (stats) => {
        summary.completed(stats.checkpointId, stats.durationMs ?? 0, stats.bytes);
        this.#committed?.completed(stats.checkpointId);
        onEvent?.({
          type: 'checkpoint-completed',
          checkpointId: stats.checkpointId,
          durationMs: stats.durationMs ?? 0,
          bytes: stats.bytes,
          alignmentMs: stats.alignmentMs,
        });
      },
      onFailed: (stats) => {
        summary.aborted();
        options.logger.warn(`checkpoint ${stats.checkpointId} aborted: ${stats.reason ?? 'unknown reason'}`);
        onEvent?.({ type: 'checkpoint-aborted', checkpointId: stats.checkpointId });
      },
    });
    this.#coordinator =
      config.checkpointing === undefined || storage === undefined
        ? undefined
        : new CheckpointCoordinator({
            config: config.checkpointing,
            storage,
            graph,
            firstCheckpointId,
            stats: this.#stats,
            log: (line) => options.logger.warn(line),
            restoredCheckpointId: isCheckpointOf(restore, storage) ? restore.checkpointId : undefined,
          });
    const coordinator = this.#coordinator;
    this.#committed = coordinator && storage && new CommittedCheckpointRecorder(storage, coordinator, (line) => options.logger.warn(line));
    this.#result = this.#run();
    this.#result.catch(() => {
      this.#state = 'failed';
    });
    const ended = () => this.#rejectRunningWaiters('the job has ended');
    this.#result.then(ended, ended);
    void this.#result.finally(() => summary.close()).catch(() => {});
  }

  client(): JobClient {
    return {
      graph: this.#graph,
      config: this.#config,
      result: this.#result,
      triggerSavepoint: () => this.#savepoint(),
      stopWithSavepoint: (stop) => this.#savepoint(stop?.drain === true ? 'drain' : 'suspend'),
      cancel: () => this.#cancel(),
      status: () => this.#status(),
    };
  }

  /** Settles when the job has ended and its sinks' end is done (also when the job's result was reported before it). */
  get ended(): Promise<void> {
    return this.#ended;
  }

  /**
   * Another process took the checkpoint folder's lock over (this one was stopped, or its heartbeat
   * could not be written, for too long): the job stops, and its sinks leave every transaction alone
   * at the end, since the new owner may be writing under the same ids.
   */
  loseLock(why: string): void {
    this.#lockLost = true;
    this.#options.logger.error(`${why}: cancelling the job, and leaving its transactions to the new owner`);
    void this.#cancel().catch(() => {});
  }

  /** The job, to its end; then the sinks finish what the tasks left open (no transaction lingers, however the job ended). */
  async #run(): Promise<JobResult> {
    try {
      return await this.#attempts();
    } finally {
      // What a start would restore: completions and discards in flight are done first.
      await this.#coordinator?.settled();
      await this.#committed?.settled();
      const completed = this.#coordinator?.latestCompleted;
      const latest = completed === undefined ? this.#restore : restoreAfterFailure(completed);
      const sinks = this.#lockLost
        ? undefined
        : finishSinksAtJobEnd({
            streamGraph: this.#streamGraph,
            graph: this.#graph,
            config: this.#config,
            latest,
            storage: this.#storage,
            warn: (line) => this.#options.logger.warn(line),
          });
      // Every sink finished: what the latest checkpoint holds is committed, and a start after a long
      // stop must not commit it again. Recorded before the lock goes.
      let sinksDone = false;
      void sinks?.settled.then(() => {
        sinksDone = true;
      });
      this.#endSettled(sinks?.settled.then((finished) => (finished ? this.#committed?.committedSnapshot(latest) : undefined)));
      await sinks?.waited;
      // When the sinks' end came within its wait, the result is reported once the record is
      // written and the lock released, so a caller can start the job again at once.
      if (sinks === undefined || sinksDone) await this.ended;
    }
  }

  /** The attempts, one after the other, as the restart strategy allows. */
  async #attempts(): Promise<JobResult> {
    const { log, onEvent } = this.#options;
    const jobName = this.#graph.jobName;
    const strategy = new RestartStrategy(this.#config.restartStrategy);
    let restarts = 0;
    for (let attemptNumber = 0; ; attemptNumber++) {
      const restore = this.#restore;
      log(restore === undefined ? `starting job "${jobName}"` : `starting job "${jobName}" from ${restoreName(restore)}`);
      onEvent?.({ type: 'started', attempt: attemptNumber, restoredCheckpointId: restore?.checkpointId });
      if (restore !== undefined) this.#stats.reportRestored();
      this.#metrics.reset();
      const attempt = new ExecutionAttempt({
        url: this.#url,
        config: this.#config,
        graph: this.#graph,
        attemptNumber,
        restore,
        storage: this.#storage,
        coordinator: this.#coordinator,
        metrics: this.#metrics,
        log,
        warmWorkers: attemptNumber === 0 ? this.#options.warmWorkers : undefined,
        onRunning: (restoredIncompletely) => {
          this.#state = 'running';
          // Not when a restore left work of it to a later checkpoint (whose completion records itself).
          if (!restoredIncompletely) void this.#committed?.committedSnapshot(restore);
          for (const waiter of [...this.#runningWaiters]) waiter.resolve();
        },
      });
      this.#current = attempt;
      this.#state = 'starting';
      try {
        await attempt.run();
        onEvent?.({ type: 'finished' });
        this.#state = this.#cancelled ? 'cancelled' : 'finished';
        const lastCheckpointId = this.#coordinator?.latestCompleted?.checkpointId ?? restore?.checkpointId;
        return this.#cancelled ? { restarts, lastCheckpointId, cancelled: true } : { restarts, lastCheckpointId };
      } catch (error) {
        const latest = this.#coordinator?.latestCompleted;
        if (latest !== undefined) this.#restore = restoreAfterFailure(latest);
        this.#failure = describeFailure(error);
        if (this.#stopRequested) throw error;
        const delay = neverRestarts(error) ? undefined : strategy.onFailure();
        if (delay === undefined) throw failedForGood(jobName, strategy, error);
        restarts++;
        this.#state = 'restarting';
        const cause = error instanceof Error ? error.message : String(error);
        this.#restartLog.push({ at: Date.now(), cause });
        this.#options.logger.warn(
          `job failed: ${cause}; restarting in ${delay} ms from ${this.#restore === undefined ? 'the beginning' : restoreName(this.#restore)}`,
        );
        onEvent?.({ type: 'restarting', attempt: attemptNumber + 1, delayMs: delay, cause });
        await sleep(delay, undefined, { signal: this.#cancelWait.signal }).catch(() => {});
        if (this.#cancelled) {
          this.#state = 'cancelled';
          return { restarts, lastCheckpointId: this.#restore?.checkpointId, cancelled: true };
        }
      }
    }
  }

  async #savepoint(stop?: StopMode): Promise<CompletedCheckpoint> {
    const coordinator = this.#coordinator;
    if (coordinator === undefined)
      throw new WeirError('NO_CHECKPOINTING', 'savepoints need checkpointing', { hint: 'configure checkpointing with a storage folder' });
    // Asked for while the job starts or restarts: the barrier can only go to running tasks.
    await this.#whenRunning();
    let completed: CompletedCheckpoint;
    if (stop === undefined) completed = await coordinator.triggerCheckpoint('savepoint');
    else {
      // Stop-with-savepoint (as Flink): no periodic checkpoint after the stopping one, so nothing
      // the job does after its barrier is committed; periodic ones resume if it is aborted.
      coordinator.stopCheckpointScheduler();
      try {
        completed = await coordinator.triggerCheckpoint('savepoint', stop);
      } catch (error) {
        coordinator.startCheckpointScheduler();
        throw error;
      }
      // From here on the job ends, whatever happens: its sources read nothing more (and after a
      // drain every window has fired), so it must never run on from this savepoint by itself.
      this.#stopRequested = true;
    }
    const attempt = this.#current;
    try {
      // A savepoint is reported only once every task has acted on its completion (the two-phase-commit
      // sinks have committed what it holds), so a restore from it never has to commit anything again.
      await coordinator.whenCommitted(completed.checkpointId);
      await this.#storage?.markCommitted(completed.location);
    } finally {
      if (stop !== undefined) attempt?.stop();
    }
    return completed;
  }

  /**
   * Resolves when the tasks run (at once when they do), for a savepoint asked for while the job
   * starts or restarts; waits at most checkpointing.timeout; rejects when the job ends first.
   */
  #whenRunning(): Promise<void> {
    if (this.#state === 'running') return Promise.resolve();
    if (this.#state === 'finished' || this.#state === 'cancelled' || this.#state === 'failed') {
      return Promise.reject(notRunning(`the job has ended (${this.#state})`));
    }
    const timeoutMs = this.#config.checkpointing?.timeout ?? 0;
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          clearTimeout(timer);
          this.#runningWaiters.delete(waiter);
          resolve();
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          this.#runningWaiters.delete(waiter);
          reject(error);
        },
      };
      const timer = setTimeout(
        () =>
          waiter.reject(
            notRunning(
              `the job's tasks did not start running within checkpointing.timeout (${timeoutMs} ms) of the request`,
              "look at the job's log for why it does not start (or keeps restarting); ask again once GET /health/ready answers 200",
            ),
          ),
        timeoutMs,
      );
      this.#runningWaiters.add(waiter);
    });
  }

  #rejectRunningWaiters(why: string): void {
    for (const waiter of [...this.#runningWaiters]) waiter.reject(notRunning(why));
  }

  async #cancel(): Promise<JobResult> {
    this.#rejectRunningWaiters('the job was cancelled');
    this.#cancelled = true;
    this.#stopRequested = true;
    this.#coordinator?.stopCheckpointScheduler();
    this.#coordinator?.abortPendingCheckpoints('CHECKPOINT_COORDINATOR_SHUTDOWN', 'the job was cancelled');
    this.#current?.stop();
    this.#cancelWait.abort();
    return this.#result;
  }

  #status(): JobStatus {
    return {
      name: this.#graph.jobName,
      state: this.#state,
      attempt: this.#restartLog.length,
      restarts: [...this.#restartLog],
      checkpoints: this.#stats.history(),
      checkpointCounts: this.#stats.counts(),
      latestCheckpointId: this.#coordinator?.latestCompleted?.checkpointId ?? this.#restore?.checkpointId,
      vertices: this.#metrics.vertices(this.#graph),
      failure: this.#failure,
    };
  }
}

function notRunning(why: string, hint = 'start the job again (`weir run`) and ask once GET /health/ready answers 200'): WeirError {
  return new WeirError('JOB_NOT_RUNNING', `cannot take the savepoint: ${why}`, { hint, retriable: true });
}

/** A failure as /api/job shows it: the message (with the job's own frames for an error of user code), the hint, the stack. */
function describeFailure(error: unknown): JobStatus['failure'] {
  if (!(error instanceof Error)) return { at: Date.now(), message: String(error), hint: undefined, stack: undefined };
  return { at: Date.now(), message: error.message, hint: error instanceof WeirError ? error.hint : undefined, stack: error.stack };
}
