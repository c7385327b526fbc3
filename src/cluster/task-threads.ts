import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import type { OffsetsOwner } from '../connectors/kafka/offsets-owner.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { serveDiskBackendCopies } from '../state/lmdb-store.ts';
import { type ControlSnapshot, controlSnapshot, sameControl } from './relayed-control.ts';
import { type FailureDetail, RemoteTask } from './remote-task.ts';
import type { ControlReader } from './savepoint-control.ts';
import type { TaskCheckpoint } from './task-checkpoint.ts';
import type { FromTaskThread, TaskThreadInit, ToTaskThread } from './task-thread-messages.ts';

const ENTRY = new URL(`./cluster-task-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** How often the member's reading of the control topic is compared with what its threads were told (the reader polls every 500 ms). */
const CONTROL_RELAY_MS = 100;

/** How long a closing thread may take to stop its tasks and close its connections before it is terminated. */
const CLOSE_WAIT_MS = 10_000;

export interface TaskThreadsOptions {
  threads: number;
  /** What every thread starts with (cluster-task-worker.ts), but its place, the owner and the control topic's state. */
  init: Omit<TaskThreadInit, 'thread' | 'incarnation' | 'owner' | 'control'>;
  owner: OffsetsOwner;
  control: ControlReader;
  log: (line: string) => void;
  warn: (line: string) => void;
}

interface Slot {
  index: number;
  /** How many threads held this place before (a thread that exited is replaced when a task needs it). */
  incarnation: number;
  worker: Worker | undefined;
  runs: Map<number, RemoteTask>;
  closed: PromiseWithResolvers<void> | undefined;
}

/**
 * A member's task threads (`cluster.threads`): worker threads that each load the job and run
 * tasks on their own Kafka connections (cluster-task-worker.ts). A task goes to the thread it ran
 * on while it stays on the member, else to the thread with the fewest tasks. The group's
 * generation and the control topic reach every thread by message, before any task started after
 * them. A thread that exits (an uncaught error) fails its tasks (each starts again after its
 * back-off, on a new thread in its place).
 */
export class TaskThreads {
  readonly #options: TaskThreadsOptions;
  readonly #slots: Slot[];
  readonly #home = new Map<string, number>();
  readonly #relay: NodeJS.Timeout;
  #owner: OffsetsOwner;
  #control: ControlSnapshot;
  #nextRun = 1;
  #closed = false;

  constructor(options: TaskThreadsOptions) {
    this.#options = options;
    this.#owner = options.owner;
    this.#control = controlSnapshot(options.control);
    this.#slots = Array.from({ length: options.threads }, (_, index) => ({ index, incarnation: -1, worker: undefined, runs: new Map(), closed: undefined }));
    for (const slot of this.#slots) this.#spawn(slot);
    this.#relay = setInterval(() => {
      const control = controlSnapshot(options.control);
      if (sameControl(control, this.#control)) return;
      this.#control = control;
      this.#broadcast({ type: 'control', control });
    }, CONTROL_RELAY_MS);
    this.#relay.unref();
  }

  get threads(): number {
    return this.#slots.length;
  }

  /** The member's place in the group changed: every thread's next commit carries it. */
  setOwner(owner: OffsetsOwner): void {
    this.#owner = owner;
    this.#broadcast({ type: 'owner', owner });
  }

  /**
   * A run of task `key` (stage uid and task number) on the thread it ran on, else on the thread
   * with the fewest tasks; `start` it on its producer.
   */
  task(
    key: string,
    name: string,
    start: { stage: string; task: number; restored: TaskCheckpoint | undefined },
    onFailure: (error: Error, detail: FailureDetail) => void,
  ): RemoteTask {
    const home = this.#home.get(key);
    const slot =
      home === undefined ? this.#slots.reduce((least, candidate) => (candidate.runs.size < least.runs.size ? candidate : least)) : (this.#slots[home] as Slot);
    this.#home.set(key, slot.index);
    if (slot.worker === undefined && !this.#closed) this.#spawn(slot);
    const worker = slot.worker;
    const run = new RemoteTask({
      run: this.#nextRun++,
      name,
      thread: slot.index,
      post: (message) => worker?.postMessage(message),
      start,
      onFailure,
    });
    if (worker === undefined) run.threadExited(new WeirError('TASK_FAILED', `${name}: the member is closing`, { fault: 'internal' }));
    else slot.runs.set(run.run, run);
    return run;
  }

  /** Task `key` left the member: should it come back, it goes to the least loaded thread. */
  forget(key: string): void {
    this.#home.delete(key);
  }

  /** Stops every thread's tasks (their open transactions aborted), closes their connections and ends the threads. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#relay);
    await Promise.all(
      this.#slots.map(async (slot) => {
        const worker = slot.worker;
        if (worker === undefined) return;
        slot.closed = Promise.withResolvers<void>();
        worker.postMessage({ type: 'close' } satisfies ToTaskThread);
        await Promise.race([slot.closed.promise, sleep(CLOSE_WAIT_MS)]);
        await worker.terminate();
      }),
    );
  }

  #spawn(slot: Slot): void {
    slot.incarnation++;
    const { config } = this.#options.init;
    const init: TaskThreadInit = { ...this.#options.init, thread: slot.index, incarnation: slot.incarnation, owner: this.#owner, control: this.#control };
    // Disk backends' bases are copied in this (the main) thread, where ending a worker cannot abort the process.
    serveDiskBackendCopies();
    const worker = new Worker(ENTRY, {
      workerData: init,
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: config.workerHeap.youngGenerationMb, maxOldGenerationSizeMb: config.workerHeap.oldGenerationMb },
    });
    slot.worker = worker;
    let failure: Error | undefined;
    worker.on('message', (message: FromTaskThread) => this.#receive(slot, message));
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (slot.worker !== worker) return;
      slot.worker = undefined;
      slot.closed?.resolve();
      if (this.#closed) return;
      const cause = failure === undefined ? `exit code ${code}` : failure.message;
      const outOfMemory = (failure as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      const error = new WeirError('WORKER_EXITED', `task thread ${slot.index} of the member exited (${cause})`, {
        fault: 'internal',
        ...(outOfMemory
          ? {
              hint: 'its tasks’ state and records did not fit: raise workerHeap.oldGenerationMb (or remove it), or run more members or threads (cluster.threads)',
            }
          : {}),
        ...(failure === undefined ? {} : { cause: failure }),
      });
      if (failure?.stack !== undefined) error.stack = failure.stack;
      const runs = [...slot.runs.values()];
      slot.runs.clear();
      this.#options.warn(`${error.message}: its ${runs.length} tasks fail and start again on a new thread in its place`);
      for (const run of runs) run.threadExited(error);
    });
  }

  #receive(slot: Slot, message: FromTaskThread): void {
    switch (message.type) {
      case 'log':
        this.#options.log(message.line);
        return;
      case 'closed':
        slot.closed?.resolve();
        return;
      case 'reports':
        for (const report of message.runs) slot.runs.get(report.run)?.report(report.snapshot, report.completed, report.latestCheckpointId);
        return;
      default: {
        const run = slot.runs.get(message.run);
        if (message.type === 'stopped') slot.runs.delete(message.run);
        run?.receive(message);
      }
    }
  }

  #broadcast(message: ToTaskThread): void {
    for (const slot of this.#slots) slot.worker?.postMessage(message);
  }
}
