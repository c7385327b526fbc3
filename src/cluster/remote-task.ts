import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { TaskMetricsSnapshot } from '../runtime/metrics/task-metrics.ts';
import type { TaskCheckpoint } from './task-checkpoint.ts';
import type { CrossingError, FromTaskThread, ToTaskThread } from './task-thread-messages.ts';

/** How a task's failure reached the main thread: whether the group refused its commit, and for which generation. */
export interface FailureDetail {
  byGroup: boolean;
  committedWith: number | undefined;
}

/** The error a task thread sent, as an Error again (a WeirError keeps its code, hint and stack). */
export function crossedError(error: CrossingError): Error {
  if ('weir' in error) return WeirError.fromSerialized(error.weir);
  const rebuilt = new Error(error.message);
  if (error.stack !== undefined) rebuilt.stack = error.stack;
  return rebuilt;
}

/**
 * One run of one task on one of its member's task threads, as the member's main thread holds it:
 * what a {@link ClusterTask} in the same thread offered (start, stop, metrics, checkpoints), its
 * numbers as the thread last reported them (every second).
 */
export class RemoteTask {
  readonly run: number;
  readonly name: string;
  /** The thread it runs on (the member logs it). */
  readonly thread: number;
  readonly #post: (message: ToTaskThread) => void;
  readonly #onFailure: (error: Error, detail: FailureDetail) => void;
  readonly #start: ToTaskThread & { type: 'start' };
  readonly #started = Promise.withResolvers<void>();
  readonly #stopped = Promise.withResolvers<void>();
  #stopping = false;
  #failed = false;
  #gone = false;
  #running = false;
  #snapshot: TaskMetricsSnapshot | undefined;
  /** The latest checkpoint it committed, else the one it restored. */
  latestCheckpointId: number | undefined;
  completed = 0;
  restoredBytes = 0;
  restoreMs = 0;
  /** Once its thread said it stopped: the checkpoint it last committed (else restored). Undefined while it runs, or when its thread exited. */
  stoppedWith: { latest: TaskCheckpoint | undefined } | undefined;

  constructor(options: {
    run: number;
    name: string;
    thread: number;
    post: (message: ToTaskThread) => void;
    start: Omit<ToTaskThread & { type: 'start' }, 'type' | 'run' | 'open'>;
    onFailure: (error: Error, detail: FailureDetail) => void;
  }) {
    this.run = options.run;
    this.name = options.name;
    this.thread = options.thread;
    this.#post = options.post;
    this.#onFailure = options.onFailure;
    this.#start = { type: 'start', run: options.run, open: { transactionalId: '', producerId: -1n, producerEpoch: -1 }, ...options.start };
    this.latestCheckpointId = options.start.restored?.checkpointId;
    this.#started.promise.catch(() => {});
  }

  /** Starts it on its thread on the producer the main thread opened (its earlier owners fenced); resolves once it runs. */
  start(open: OpenTransaction): Promise<void> {
    if (this.#gone) return Promise.reject(new WeirError('TASK_FAILED', `${this.name}: its task thread ${this.thread} has exited`, { fault: 'internal' }));
    const { transactionalId, producerId, producerEpoch } = open;
    this.#post({ ...this.#start, open: { transactionalId, producerId, producerEpoch } });
    return this.#started.promise;
  }

  /** Stops it: no more input, its open transaction aborted; resolves once its thread says so (or has exited). */
  stop(): Promise<void> {
    if (!this.#stopping) {
      this.#stopping = true;
      if (this.#gone) this.#stopped.resolve();
      else this.#post({ type: 'stop', run: this.run });
    }
    return this.#stopped.promise;
  }

  metrics(_now: number): TaskMetricsSnapshot | undefined {
    return this.#snapshot;
  }

  /** What its thread said of it. */
  receive(message: FromTaskThread): void {
    switch (message.type) {
      case 'started':
        this.restoredBytes = message.restoredBytes;
        this.restoreMs = message.restoreMs;
        this.#running = true;
        this.#started.resolve();
        return;
      case 'startFailed':
        this.#started.reject(crossedError(message.error));
        return;
      case 'failed':
        this.#fail(crossedError(message.error), { byGroup: message.byGroup, committedWith: message.committedWith });
        return;
      case 'stopped':
        this.stoppedWith = { latest: message.latest };
        this.#gone = true;
        this.#stopped.resolve();
        return;
      default:
        return;
    }
  }

  report(snapshot: TaskMetricsSnapshot | undefined, completed: number, latestCheckpointId: number | undefined): void {
    this.#snapshot = snapshot;
    this.completed = completed;
    if (latestCheckpointId !== undefined) this.latestCheckpointId = latestCheckpointId;
  }

  /** Its thread exited: a run starting fails its start, a running one fails (it starts again after its back-off). */
  threadExited(error: Error): void {
    this.#gone = true;
    this.#started.reject(error); // a start under way fails with it (its member handles that failure)
    this.#stopped.resolve();
    if (this.#running) this.#fail(error, { byGroup: false, committedWith: undefined });
  }

  #fail(error: Error, detail: FailureDetail): void {
    if (this.#failed || this.#stopping) return;
    this.#failed = true;
    this.#onFailure(error, detail);
  }
}
