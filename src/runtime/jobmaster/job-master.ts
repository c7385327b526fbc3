import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { CheckpointCoordinator, type CheckpointStats, type CompletedCheckpoint } from '../../checkpoint/checkpoint-coordinator.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointStorage, StoredCheckpointMetadata } from '../../checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../checkpoint/storage/completed-checkpoint-store.ts';
import { openCheckpointStorage } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { type EnvironmentConfig, type EnvironmentConfigInput, parseEnvironmentConfig } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { buildStreamGraph } from '../../graph/job.ts';
import { buildJobGraph, type JobGraph } from '../../graph/job-graph.ts';
import { buildExecutionPlan } from '../deployment/execution-plan.ts';
import { loadJobModule } from '../deployment/job-module.ts';
import type { FromWorker, RestoreInfo, ToWorker, WorkerInit } from '../deployment/worker-messages.ts';
import { JobMetrics, type VertexMetrics } from '../metrics/job-metrics.ts';
import { injectedFault } from './injected-fault.ts';
import { RestartStrategy } from './restart-strategy.ts';
import { enforcePreflight, runPreflight } from './run-preflight.ts';

export interface RunJobOptions {
  /** Path (or file URL) of the job module. */
  job: string;
  /** Options over the job's own `config`. */
  config?: EnvironmentConfigInput;
  /** Start without restoring the latest checkpoint of the checkpoint folder. */
  fresh?: boolean;
  /** Start from this savepoint (or checkpoint) folder. */
  fromSavepoint?: string;
  log?: (line: string) => void;
  onEvent?: (event: JobEvent) => void;
}

export type JobEvent =
  | { type: 'started'; attempt: number; restoredCheckpointId: number | undefined }
  | { type: 'checkpoint-completed'; checkpointId: number; durationMs: number; bytes: number; alignmentMs: number }
  | { type: 'checkpoint-aborted'; checkpointId: number }
  | { type: 'restarting'; attempt: number; delayMs: number; cause: string }
  | { type: 'finished' };

export interface JobResult {
  restarts: number;
  /** The job was cancelled ({@link JobClient.cancel}) rather than run to its end. */
  cancelled?: boolean;
  lastCheckpointId: number | undefined;
}

/** A handle on a running job: savepoints and stop-with-savepoint act through it. */
export interface JobClient {
  readonly graph: JobGraph;
  readonly config: EnvironmentConfig;
  triggerSavepoint(): Promise<CompletedCheckpoint>;
  /**
   * Stops the job with a savepoint (Flink's stop-with-savepoint): the sources emit nothing after
   * its barrier. `drain`: first the end-of-event-time watermark, so every event-time window and
   * timer fires into the savepoint (for a job that will not be resumed, or not soon).
   */
  stopWithSavepoint(options?: { drain?: boolean }): Promise<CompletedCheckpoint>;
  /**
   * Cancels the job (Flink's cancel, what `weir run` does on SIGTERM or SIGINT): checkpointing
   * stops, the tasks close, and the sinks abort their open transactions. Pre-committed ones of a
   * checkpoint that did not complete stay for the next start to abort; it resumes from the latest
   * completed checkpoint. Resolves with the job's result.
   */
  cancel(): Promise<JobResult>;
  readonly result: Promise<JobResult>;
  /** What runs now: for the REST API and the dashboard. */
  status(): JobStatus;
}

export interface JobStatus {
  name: string;
  /** 'starting': the workers are loading the job and opening its tasks (Flink's INITIALIZING). */
  state: 'starting' | 'running' | 'restarting' | 'finished' | 'cancelled' | 'failed';
  attempt: number;
  restarts: { at: number; cause: string }[];
  checkpoints: CheckpointStats[];
  latestCheckpointId: number | undefined;
  /** Per job vertex: records in and out, rates, back pressure, operator metrics (this attempt). */
  vertices: VertexMetrics[];
}

/**
 * The JobManager's part (Flink's JobMaster): loads the job, plans it, starts the worker threads,
 * runs the checkpoint coordinator, and restarts the job from the latest completed checkpoint when
 * a task fails, as the restart strategy allows. A new process on the same checkpoint folder
 * resumes from the latest completed checkpoint.
 */
export async function startJob(options: RunJobOptions): Promise<JobClient> {
  const log = options.log ?? (() => {});
  const url = options.job.startsWith('file:') ? options.job : pathToFileURL(resolve(options.job)).href;
  const job = await loadJobModule(url);
  // Options over the job's own config; checkpointing merges setting by setting.
  const checkpointing =
    job.config?.checkpointing === undefined && options.config?.checkpointing === undefined
      ? {}
      : { checkpointing: { ...job.config?.checkpointing, ...options.config?.checkpointing } };
  const config = parseEnvironmentConfig({ ...job.config, ...options.config, ...checkpointing });
  const streamGraph = buildStreamGraph(job);
  const graph = buildJobGraph(job.name, streamGraph, config);

  enforcePreflight(await runPreflight(job.name, streamGraph, graph, config), log);

  const storage = config.checkpointing === undefined ? undefined : openCheckpointStorage(config.checkpointing.storage);
  await storage?.initialize();
  let restored: StoredCheckpointMetadata | undefined;
  if (options.fromSavepoint !== undefined) {
    // readMetadata reads the folder it is given; it needs no particular storage directory.
    restored = await (storage ?? openCheckpointStorage(options.fromSavepoint)).readMetadata(options.fromSavepoint);
  } else if (!options.fresh && storage !== undefined) {
    restored = await new CompletedCheckpointStore(storage).latest();
  }
  if (restored !== undefined) validateRestore(graph, restored);
  let restore =
    restored === undefined
      ? undefined
      : restoreInfoOf(
          restored,
          restored.kind === 'savepoint' && (await (storage ?? openCheckpointStorage(restored.location.path)).isMarkedCommitted(restored.location.path)),
        );
  const highest = storage === undefined ? 0 : await new CompletedCheckpointStore(storage).highestCheckpointId();
  let nextCheckpointId = Math.max(highest, restore?.checkpointId ?? 0) + 1;

  const strategy = new RestartStrategy(config.restartStrategy);
  let current: Attempt | undefined;
  let stopRequested = false;
  let cancelled = false;

  let state: JobStatus['state'] = 'starting';
  const restartLog: JobStatus['restarts'] = [];
  const history: CheckpointStats[] = [];
  const metrics = new JobMetrics();
  const result = (async (): Promise<JobResult> => {
    let restarts = 0;
    for (let attemptNumber = 0; ; attemptNumber++) {
      log(restore === undefined ? `starting job "${job.name}"` : `starting job "${job.name}" from checkpoint ${restore.checkpointId}`);
      options.onEvent?.({ type: 'started', attempt: attemptNumber, restoredCheckpointId: restore?.checkpointId });
      metrics.reset();
      const attempt = new Attempt({
        url,
        config,
        graph,
        attemptNumber,
        restore,
        storage,
        nextCheckpointId,
        log,
        onEvent: options.onEvent,
        metrics,
        onRunning: () => {
          state = 'running';
        },
      });
      if (current?.coordinator !== undefined) history.push(...current.coordinator.history.filter((entry) => !history.includes(entry)));
      current = attempt;
      state = 'starting';
      try {
        await attempt.run();
        options.onEvent?.({ type: 'finished' });
        state = cancelled ? 'cancelled' : 'finished';
        const lastCheckpointId = attempt.coordinator?.latestCompleted?.checkpointId ?? restore?.checkpointId;
        return cancelled ? { restarts, lastCheckpointId, cancelled } : { restarts, lastCheckpointId };
      } catch (error) {
        const latest = attempt.coordinator?.latestCompleted;
        if (latest !== undefined) restore = restoreInfoOf({ ...latest.metadata, location: latest.location }, false);
        nextCheckpointId = attempt.nextCheckpointId();
        if (stopRequested) throw error;
        const delay = error instanceof WeirError && error.code === 'DATA_LOSS' ? undefined : strategy.onFailure();
        if (delay === undefined) {
          if (error instanceof WeirError && error.code !== 'DATA_LOSS') {
            throw new WeirError(error.code, `job "${job.name}" failed (${strategy.describe()}, no restart left): ${error.message}`, {
              hint: error.hint,
              fault: error.fault,
              cause: error,
            });
          }
          throw error;
        }
        restarts++;
        state = 'restarting';
        const cause = error instanceof Error ? error.message : String(error);
        restartLog.push({ at: Date.now(), cause });
        log(`job failed: ${cause}; restarting in ${delay} ms from ${restore === undefined ? 'the beginning' : `checkpoint ${restore.checkpointId}`}`);
        options.onEvent?.({ type: 'restarting', attempt: attemptNumber + 1, delayMs: delay, cause });
        await sleep(delay);
        if (cancelled) {
          state = 'cancelled';
          return { restarts, lastCheckpointId: restore?.checkpointId, cancelled };
        }
      }
    }
  })();
  result.catch(() => {
    state = 'failed';
  });

  const savepoint = async (stop?: StopMode): Promise<CompletedCheckpoint> => {
    const coordinator = current?.coordinator;
    if (coordinator === undefined)
      throw new WeirError('NO_CHECKPOINTING', 'savepoints need checkpointing', { hint: 'configure checkpointing with a storage folder' });
    let completed: CompletedCheckpoint;
    if (stop === undefined) completed = await coordinator.triggerNow('savepoint');
    else {
      // Stop-with-savepoint (as Flink): no periodic checkpoint after the stopping one, so nothing
      // the job does after its barrier is committed; periodic ones resume if it is aborted.
      coordinator.stopPeriodic();
      try {
        completed = await coordinator.triggerNow('savepoint', stop);
      } catch (error) {
        coordinator.resumePeriodic();
        throw error;
      }
      // From here on the job ends, whatever happens: its sources read nothing more (and after a
      // drain every window has fired), so it must never run on from this savepoint by itself.
      stopRequested = true;
    }
    try {
      // A savepoint is reported only once every task has acted on its completion (the two-phase-commit
      // sinks have committed what it holds), so a restore from it never has to commit anything again.
      await current?.committed(completed.checkpointId);
      await storage?.markCommitted(completed.location);
    } finally {
      if (stop !== undefined) await current?.stop();
    }
    return completed;
  };
  return {
    graph,
    config,
    result,
    triggerSavepoint: () => savepoint(),
    stopWithSavepoint: (stopOptions) => savepoint(stopOptions?.drain === true ? 'drain' : 'suspend'),
    cancel: async () => {
      cancelled = true;
      stopRequested = true;
      current?.coordinator?.stop('the job was cancelled');
      await current?.stop();
      return result;
    },
    status: () => {
      const checkpoints = [...history, ...(current?.coordinator?.history ?? [])].slice(-100);
      return {
        name: job.name,
        state,
        attempt: restartLog.length,
        restarts: [...restartLog],
        checkpoints,
        latestCheckpointId: current?.coordinator?.latestCompleted?.checkpointId ?? restore?.checkpointId,
        vertices: metrics.vertices(graph),
      };
    },
  };
}

/** Runs a job to its end (bounded jobs) or until it fails for good. */
export async function runJob(options: RunJobOptions): Promise<JobResult> {
  return (await startJob(options)).result;
}

function restoreInfoOf(metadata: StoredCheckpointMetadata, transactionsCommitted: boolean): RestoreInfo {
  return {
    transactionsCommitted,
    checkpointId: metadata.checkpointId,
    folder: metadata.location.path,
    maxParallelism: metadata.maxParallelism,
    operators: metadata.operators.map((operator) => ({ uid: operator.uid, parallelism: operator.parallelism, subtasks: operator.subtasks })),
  };
}

function validateRestore(graph: JobGraph, restored: StoredCheckpointMetadata): void {
  const what = `${restored.kind} ${restored.checkpointId} (${restored.location.path})`;
  if (restored.maxParallelism !== graph.maxParallelism) {
    throw new WeirError(
      'MAX_PARALLELISM_CHANGED',
      `${what} was taken with maxParallelism ${restored.maxParallelism}, the job now has ${graph.maxParallelism}`,
      {
        hint: `set maxParallelism back to ${restored.maxParallelism}: it is fixed for the life of a job`,
      },
    );
  }
  const uids = new Set(graph.nodes.map((node) => node.uid));
  for (const operator of restored.operators) {
    const hasState = operator.subtasks.some((subtask) => subtask.keyed !== undefined || subtask.operator !== undefined);
    if (hasState && !uids.has(operator.uid)) {
      throw new WeirError('UNKNOWN_OPERATOR_STATE', `${what} holds state of operator uid "${operator.uid}" (${operator.name}), which the job does not have`, {
        hint: 'give the operator that owns this state the same uid again, or start with --fresh to drop all state',
      });
    }
  }
}

interface AttemptOptions {
  url: string;
  config: EnvironmentConfig;
  graph: JobGraph;
  attemptNumber: number;
  restore: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  nextCheckpointId: number;
  log: (line: string) => void;
  onEvent: ((event: JobEvent) => void) | undefined;
  metrics: JobMetrics;
  /** Every worker has opened its tasks and they run. */
  onRunning: () => void;
}

/** One run of the job's workers, from start (or restore) to its end or first failure. */
class Attempt {
  readonly #options: AttemptOptions;
  readonly #workers: Worker[] = [];
  coordinator: CheckpointCoordinator | undefined;
  #fail!: (error: Error) => void;
  readonly #notified = new Map<number, Set<string>>();
  readonly #whenCommitted = new Map<number, { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void }>();
  #finish!: () => void;
  #stopping = false;

  constructor(options: AttemptOptions) {
    this.#options = options;
  }

  nextCheckpointId(): number {
    return Math.max(this.#options.nextCheckpointId, (this.coordinator?.history.at(-1)?.checkpointId ?? 0) + 1);
  }

  async run(): Promise<void> {
    const { url, config, graph, attemptNumber, restore, storage, log } = this.#options;
    const plan = buildExecutionPlan(graph, config.workers);
    const ports = new Map<number, Map<number, MessagePort>>();
    for (let a = 0; a < plan.workers; a++) ports.set(a, new Map());
    for (let a = 0; a < plan.workers; a++) {
      for (let b = a + 1; b < plan.workers; b++) {
        const channel = new MessageChannel();
        ports.get(a)?.set(b, channel.port1);
        ports.get(b)?.set(a, channel.port2);
      }
    }
    const totalTasks = graph.vertices.reduce((sum, vertex) => sum + vertex.parallelism, 0);
    const ended = new Set<string>();
    let ready = 0;
    let finished = 0;

    const done = new Promise<void>((resolve, reject) => {
      this.#fail = (error) => {
        for (const waiter of this.#whenCommitted.values()) waiter.reject(error);
        reject(error);
      };
      this.#finish = resolve;
    });

    if (config.checkpointing !== undefined && storage !== undefined) {
      this.coordinator = new CheckpointCoordinator({
        config: config.checkpointing,
        storage,
        graph,
        nextCheckpointId: this.#options.nextCheckpointId,
        trigger: (location, stop) => this.#broadcast(stop === undefined ? { type: 'trigger', location } : { type: 'trigger', location, stop }),
        notifyComplete: (checkpointId) => {
          injectedFault('after-checkpoint-metadata', checkpointId);
          const stats = this.coordinator?.history.find((entry) => entry.checkpointId === checkpointId);
          this.#options.onEvent?.({
            type: 'checkpoint-completed',
            checkpointId,
            durationMs: stats?.durationMs ?? 0,
            bytes: stats?.bytes ?? 0,
            alignmentMs: stats?.alignmentMs ?? 0,
          });
          this.#broadcast({ type: 'complete', checkpointId });
        },
        notifyAborted: (checkpointId) => {
          const reason = this.coordinator?.history.find((entry) => entry.checkpointId === checkpointId)?.reason;
          log(`checkpoint ${checkpointId} aborted: ${reason ?? 'unknown reason'}`);
          this.#options.onEvent?.({ type: 'checkpoint-aborted', checkpointId });
          this.#broadcast({ type: 'abort', checkpointId });
        },
        onFailure: (error) => this.#fail(error),
        log,
      });
    }

    const onMessage = (message: FromWorker) => {
      switch (message.type) {
        case 'ready':
          if (++ready === plan.workers) {
            for (const worker of this.#workers) worker.postMessage({ type: 'run' });
            this.coordinator?.start();
            this.#options.onRunning();
          }
          return;
        case 'ack':
          this.coordinator?.receiveAck(message.checkpointId, message.vertexId, message.subtaskIndex, message.operators, message.alignmentMs, message.bytes);
          return;
        case 'decline':
          this.coordinator?.receiveDecline(message.checkpointId, `${graph.vertices[message.vertexId]?.name} (${message.subtaskIndex + 1})`, message.reason);
          return;
        case 'failed':
          this.#fail(WeirError.fromSerialized(message.error));
          return;
        case 'endOfData':
          ended.add(`${message.vertexId}/${message.subtaskIndex}`);
          if (ended.size === totalTasks) {
            if (this.coordinator === undefined) {
              this.#finish();
              return;
            }
            // Bounded input is done: a final checkpoint lets the two-phase-commit sinks commit the rest.
            // No periodic checkpoint may overtake (and so subsume) it.
            this.coordinator.stopPeriodic();
            log('every input has ended: taking the final checkpoint');
            this.coordinator
              .triggerNow('checkpoint')
              .then((completed) => this.committed(completed.checkpointId))
              .then(() => this.#finish())
              .catch((error: Error) => this.#fail(error));
          }
          return;
        case 'notified': {
          const set = this.#notified.get(message.checkpointId) ?? new Set<string>();
          set.add(`${message.vertexId}/${message.subtaskIndex}`);
          this.#notified.set(message.checkpointId, set);
          if (set.size === totalTasks) this.#whenCommitted.get(message.checkpointId)?.resolve();
          return;
        }
        case 'metrics':
          this.#options.metrics.update(message.tasks);
          return;
        case 'finished':
          finished++;
          return;
      }
    };

    for (let index = 0; index < plan.workers; index++) {
      const peers = ports.get(index) as Map<number, MessagePort>;
      const init: WorkerInit = {
        workerIndex: index,
        jobModuleUrl: url,
        jobName: graph.jobName,
        config,
        graph,
        plan,
        attemptNumber,
        restore,
        checkpointFolder: storage?.root,
      };
      const worker = new Worker(new URL(`../taskexecutor/worker-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url), {
        workerData: { init, peers },
        transferList: [...peers.values()],
        execArgv: [],
      });
      worker.on('message', onMessage);
      worker.on('error', (error) => this.#fail(error));
      worker.on('exit', (code) => {
        if (!this.#stopping) this.#fail(new WeirError('WORKER_EXITED', `worker thread ${index} exited (code ${code})`, { fault: 'internal' }));
      });
      this.#workers.push(worker);
    }
    log(`running ${graph.vertices.map((vertex) => `${vertex.name} x${vertex.parallelism}`).join(', ')} on ${plan.workers} worker threads`);

    try {
      await done;
      this.coordinator?.stop();
      await this.coordinator?.settled();
      this.#stopping = true;
      this.#broadcast({ type: 'finish' });
      const deadline = Date.now() + 10_000;
      while (finished < plan.workers && Date.now() < deadline) await sleep(10);
    } finally {
      this.coordinator?.stop();
      await this.#terminate();
    }
  }

  /** Resolves once every task has processed "checkpoint N complete" (its sinks have committed up to N). */
  committed(checkpointId: number): Promise<void> {
    const total = this.#options.graph.vertices.reduce((sum, vertex) => sum + vertex.parallelism, 0);
    if ((this.#notified.get(checkpointId)?.size ?? 0) === total) return Promise.resolve();
    let waiter = this.#whenCommitted.get(checkpointId);
    if (waiter === undefined) {
      let resolve!: () => void;
      let reject!: (error: Error) => void;
      const promise = new Promise<void>((done, fail) => {
        resolve = done;
        reject = fail;
      });
      waiter = { promise, resolve, reject };
      this.#whenCommitted.set(checkpointId, waiter);
    }
    return waiter.promise;
  }

  /** Stops the job after a stop-with-savepoint. */
  async stop(): Promise<void> {
    this.#finish();
  }

  #broadcast(message: ToWorker): void {
    for (const worker of this.#workers) worker.postMessage(message);
  }

  async #terminate(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}
