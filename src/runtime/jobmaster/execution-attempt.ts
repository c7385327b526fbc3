import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { CheckpointCoordinator, CheckpointTaskGateway } from '../../checkpoint/checkpoint-coordinator.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { connectorDefaults } from '../../core/config/connector-defaults.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import { buildExecutionPlan, type ExecutionPlan } from '../deployment/execution-plan.ts';
import type { RestoreInfo } from '../deployment/restore-info.ts';
import type { FromWorker, ToWorker, WorkerInit, WorkerStart } from '../deployment/worker-messages.ts';
import type { JobMetrics } from '../metrics/job-metrics.ts';
import { injectedFault, injectedFaultPoint } from './injected-fault.ts';
import { spawnWorker, type WarmWorkers } from './warm-workers.ts';

export interface ExecutionAttemptOptions {
  url: string;
  config: EnvironmentConfig;
  graph: JobGraph;
  attemptNumber: number;
  restore: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  /** The job's coordinator (undefined without checkpointing): this attempt attaches its tasks to it. */
  coordinator: CheckpointCoordinator | undefined;
  metrics: JobMetrics;
  log: (line: string) => void;
  /** Every worker has opened its tasks and they run; `restoredIncompletely`: a task's restore left work of the restored snapshot to a later checkpoint. */
  onRunning: (restoredIncompletely: boolean) => void;
  /** Worker threads started before the job (the first attempt of `weir run`): taken as the plan fits. */
  warmWorkers?: WarmWorkers | undefined;
}

/**
 * One run of the job's worker threads (Flink's execution attempt of the whole graph), from start or
 * restore to its end or first failure: it starts the workers, wires their channels, attaches its
 * tasks to the checkpoint coordinator and routes the tasks' messages to it, and after a bounded
 * job's inputs end takes the final checkpoint.
 */
export class ExecutionAttempt implements CheckpointTaskGateway {
  readonly #options: ExecutionAttemptOptions;
  readonly #workers: Worker[] = [];
  readonly #done: Promise<void>;
  #fail!: (error: Error) => void;
  #finish!: () => void;
  #stopping = false;
  /** Acknowledgements per checkpoint, counted only for the `checkpoint-acknowledged` crash point. */
  readonly #acknowledged = new Map<number, number>();

  constructor(options: ExecutionAttemptOptions) {
    this.#options = options;
    this.#done = new Promise<void>((resolve, reject) => {
      this.#fail = reject;
      this.#finish = resolve;
    });
    this.#done.catch(() => {}); // run() reports it
  }

  /** Runs the attempt: resolves when it finished (bounded input, stop, cancel), rejects with its first failure. */
  async run(): Promise<void> {
    const { config, graph, coordinator, storage, log } = this.#options;
    const plan = buildExecutionPlan(graph, config.workers);
    try {
      // A process whose checkpoint storage another one took over (it was paused past the lock's
      // staleness) must not start tasks: their sinks would fence the new owner's transactions.
      await storage?.verifyLock();
      const finished = this.#startWorkers(plan);
      log(`running ${graph.vertices.map((vertex) => `${vertex.name} x${vertex.parallelism}`).join(', ')} on ${plan.workers} worker threads`);
      await this.#done;
      coordinator?.detach('CHECKPOINT_COORDINATOR_SHUTDOWN', new WeirError('JOB_STOPPED', 'the job stopped', { fault: 'internal' }));
      await coordinator?.settled();
      this.#stopping = true;
      this.#broadcast({ type: 'finish' });
      const deadline = Date.now() + 10_000;
      while (finished.count < plan.workers && Date.now() < deadline) await sleep(10);
    } catch (error) {
      coordinator?.detach('JOB_FAILOVER', error instanceof Error ? error : new Error(String(error)));
      // The coordinator may still be writing the metadata of a checkpoint it has just aborted. The
      // restart must not begin before that write has settled and the aborted checkpoint is
      // discarded: the new attempt's sinks abort every transaction the restored checkpoint does
      // not hold, so a crash in between would leave a restorable checkpoint whose transactions
      // are gone (DATA_LOSS on the next start). The tasks go first: none acts on anything meanwhile.
      await this.#terminate();
      await coordinator?.settled();
      // A failure of a process that lost its lock (its producers fenced by the new owner, say):
      // checking the lock now tells the job master (onLost), so it does not restart the job.
      await storage?.verifyLock().catch(() => {});
      throw error;
    } finally {
      await this.#terminate();
    }
  }

  /** Ends the attempt as finished (after a stop-with-savepoint or a cancel). */
  stop(): void {
    this.#finish();
  }

  // --- the coordinator's view of this attempt's tasks (CheckpointTaskGateway) -------------

  triggerCheckpoint(location: CheckpointLocation, stop: StopMode | undefined): void {
    this.#broadcast(stop === undefined ? { type: 'trigger', location } : { type: 'trigger', location, stop });
  }

  notifyCheckpointComplete(checkpointId: number): void {
    // The crash tests inject here: the metadata is durable, and no task has been told yet.
    const fault = injectedFault('after-checkpoint-metadata', checkpointId);
    if (fault !== undefined) {
      this.#fail(fault);
      return;
    }
    this.#broadcast({ type: 'complete', checkpointId });
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.#broadcast({ type: 'abort', checkpointId });
  }

  failJob(error: WeirError): void {
    this.#fail(error);
  }

  // --- workers ---------------------------------------------------------------------------

  #startWorkers(plan: ExecutionPlan): { count: number } {
    const count = plan.workers;
    const { url, config, graph, attemptNumber, restore, storage } = this.#options;
    const ports = new Map<number, Map<number, MessagePort>>();
    for (let a = 0; a < count; a++) ports.set(a, new Map());
    for (let a = 0; a < count; a++) {
      for (let b = a + 1; b < count; b++) {
        const channel = new MessageChannel();
        ports.get(a)?.set(b, channel.port1);
        ports.get(b)?.set(a, channel.port2);
      }
    }
    const finished = { count: 0 };
    const onMessage = this.#router(count, finished);
    // Threads started before the job (warm-workers.ts), as many as fit; the attempt starts the rest.
    const warm = this.#options.warmWorkers?.take(count, config.workerHeap) ?? [];
    for (let index = 0; index < count; index++) {
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
        checkpointStorage: storage?.root,
        connectorDefaults: connectorDefaults(),
      };
      const start: WorkerStart = { init, peers };
      const warmWorker = warm[index];
      const worker = warmWorker ?? spawnWorker(start, config.workerHeap, [...peers.values()]);
      warmWorker?.postMessage(start, [...peers.values()]);
      worker.on('message', onMessage);
      worker.on('error', (error) => this.#fail(outOfMemoryOr(error, config.workerHeap)));
      worker.on('exit', (code) => {
        if (!this.#stopping) this.#fail(new WeirError('WORKER_EXITED', `worker thread ${index} exited (code ${code})`, { fault: 'internal' }));
      });
      this.#workers.push(worker);
    }
    return finished;
  }

  /** What the workers' tasks tell the job master, routed to the coordinator and the metrics. */
  #router(workers: number, finished: { count: number }): (message: FromWorker) => void {
    const { graph, coordinator, metrics, log, onRunning } = this.#options;
    const totalTasks = graph.vertices.reduce((sum, vertex) => sum + vertex.parallelism, 0);
    const ended = new Set<string>();
    let ready = 0;
    let restoredIncompletely = false;
    const localReads = { localFiles: 0, localBytes: 0, storageFiles: 0 };
    return (message) => {
      switch (message.type) {
        case 'ready':
          if (message.restoredIncompletely === true) restoredIncompletely = true;
          if (message.localRecovery !== undefined) {
            localReads.localFiles += message.localRecovery.localFiles;
            localReads.localBytes += message.localRecovery.localBytes;
            localReads.storageFiles += message.localRecovery.storageFiles;
          }
          if (++ready === workers) {
            if (localReads.localFiles + localReads.storageFiles > 0)
              log(
                `local recovery: ${localReads.localFiles} state files (${localReads.localBytes} bytes) read from this machine's copies, ${localReads.storageFiles} from the checkpoint storage`,
              );
            this.#broadcast({ type: 'run' });
            coordinator?.attach(this);
            coordinator?.startCheckpointScheduler();
            onRunning(restoredIncompletely);
          }
          return;
        case 'ack':
          coordinator?.receiveAcknowledge(message.checkpointId, message, message.operators, message.alignmentMs, message.bytes, {
            syncMs: message.syncMs ?? 0,
            asyncMs: message.asyncMs ?? 0,
          });
          if (injectedFaultPoint === 'checkpoint-acknowledged') this.#injectAfterAcknowledged(message.checkpointId, totalTasks);
          return;
        case 'decline':
          coordinator?.receiveDecline(message.checkpointId, message, message.failure);
          return;
        case 'failed':
          this.#fail(WeirError.fromSerialized(message.error));
          return;
        case 'endOfData':
          ended.add(`${message.vertexId}/${message.subtaskIndex}`);
          if (ended.size < totalTasks) return;
          if (coordinator === undefined) {
            this.#finish();
            return;
          }
          // Bounded input is done: a final checkpoint lets the two-phase-commit sinks commit the rest.
          // No periodic checkpoint may overtake (and so subsume) it.
          coordinator.stopCheckpointScheduler();
          log('every input has ended: taking the final checkpoint');
          coordinator
            .triggerCheckpoint('checkpoint')
            .then((completed) => coordinator.whenCommitted(completed.checkpointId))
            .then(() => this.#finish())
            .catch((error: Error) => this.#fail(error));
          return;
        case 'notified':
          coordinator?.receiveNotified(message.checkpointId, message);
          return;
        case 'metrics':
          metrics.update(message.tasks);
          return;
        case 'finished':
          finished.count++;
          return;
      }
    };
  }

  /** The crash tests' `checkpoint-acknowledged` point: the last task's acknowledgement of a checkpoint has reached the coordinator. */
  #injectAfterAcknowledged(checkpointId: number, totalTasks: number): void {
    const acknowledged = (this.#acknowledged.get(checkpointId) ?? 0) + 1;
    this.#acknowledged.set(checkpointId, acknowledged);
    if (acknowledged < totalTasks) return;
    this.#acknowledged.delete(checkpointId);
    const fault = injectedFault('checkpoint-acknowledged', checkpointId);
    if (fault !== undefined) this.#fail(fault);
  }

  #broadcast(message: ToWorker): void {
    for (const worker of this.#workers) worker.postMessage(message);
  }

  async #terminate(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}

/** A worker that ran out of heap, as an error naming the limit it hit and the setting to raise; any other error as it is. */
function outOfMemoryOr(error: Error, heap: EnvironmentConfig['workerHeap']): Error {
  if ((error as { code?: string }).code !== 'ERR_WORKER_OUT_OF_MEMORY') return error;
  const limit = heap.oldGenerationMb === undefined ? "V8's own heap limit" : `workerHeap.oldGenerationMb=${heap.oldGenerationMb}`;
  return new WeirError('WORKER_OUT_OF_MEMORY', `a worker thread ran out of memory (${limit}): its state and the records it holds did not fit`, {
    hint: 'raise workerHeap.oldGenerationMb (or remove it), spread the keys over more subtasks (parallelism), or expire old state (enableTimeToLive)',
    cause: error,
  });
}
