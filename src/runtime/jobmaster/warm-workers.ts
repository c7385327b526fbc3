import { availableParallelism } from 'node:os';
import { type TransferListItem, Worker } from 'node:worker_threads';
import type { ConnectorDefaults } from '../../core/config/connector-defaults.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import { serveDiskBackendCopies } from '../../state/lmdb-store.ts';
import type { WarmWorkerData } from '../deployment/worker-messages.ts';

/** Every worker thread of a job runs this module (runtime/taskexecutor/worker-main). */
export const WORKER_ENTRY = new URL(`../taskexecutor/worker-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

type WorkerHeap = EnvironmentConfig['workerHeap'];

/** A worker thread of a job, with the V8 heap limits `workerHeap` gives it. */
export function spawnWorker(workerData: unknown, heap: WorkerHeap, transferList?: readonly TransferListItem[]): Worker {
  // Disk backends' bases are copied in this (the main) thread, where ending a worker cannot abort the process.
  serveDiskBackendCopies();
  return new Worker(WORKER_ENTRY, {
    workerData,
    ...(transferList === undefined ? {} : { transferList: [...transferList] }),
    execArgv: [],
    resourceLimits: { maxYoungGenerationSizeMb: heap.youngGenerationMb, maxOldGenerationSizeMb: heap.oldGenerationMb },
  });
}

/**
 * Worker threads started before the job is: `weir run` starts them as soon as it knows the job
 * module and the command line's settings, so that their start-up (Node loading the runtime's and
 * the job module's code in each thread, the longest part of a restart after a crash) overlaps the
 * main thread's (loading the job, the checkpoint folder's lock, the sinks' preflight, the restore
 * point). Each loads the job module and then waits for its `init` (runtime/taskexecutor/worker-main).
 *
 * The count and the heap limits are a guess from the command line and the config file (the job's
 * own config may set others): the first execution attempt {@link take}s the threads that fit its
 * plan and starts the rest itself; a thread that does not fit is terminated, as are all of them
 * when the job never starts ({@link close}). Unreferenced until taken: they never keep a process alive.
 */
export class WarmWorkers {
  readonly #heap: WorkerHeap;
  #idle: Worker[] = [];
  readonly #dead = new Set<Worker>();

  private constructor(heap: WorkerHeap) {
    this.#heap = heap;
  }

  /** Starts `count` threads (default: the cores) loading `jobModuleUrl`. */
  static start(options: { jobModuleUrl: string; count: number | undefined; heap: WorkerHeap; connectorDefaults: ConnectorDefaults }): WarmWorkers {
    const warm = new WarmWorkers(options.heap);
    const data: WarmWorkerData = { warm: { jobModuleUrl: options.jobModuleUrl, connectorDefaults: options.connectorDefaults } };
    for (let index = 0; index < (options.count ?? availableParallelism()); index++) {
      const worker = spawnWorker(data, options.heap);
      worker.unref();
      // Until taken: a thread that fails to start is left out (the attempt starts one of its own, which reports why).
      worker.once('error', () => warm.#dead.add(worker));
      worker.once('exit', () => warm.#dead.add(worker));
      warm.#idle.push(worker);
    }
    return warm;
  }

  /**
   * Up to `count` started threads whose heap limits are `heap`, referenced again and theirs to
   * keep (listeners of their own). Once only: what is left is terminated.
   */
  take(count: number, heap: WorkerHeap): Worker[] {
    const fits = heap.youngGenerationMb === this.#heap.youngGenerationMb && heap.oldGenerationMb === this.#heap.oldGenerationMb;
    const alive = this.#idle.filter((worker) => !this.#dead.has(worker));
    const taken = fits ? alive.slice(0, count) : [];
    for (const worker of taken) {
      worker.removeAllListeners('error');
      worker.removeAllListeners('exit');
      worker.ref();
    }
    this.#idle = this.#idle.filter((worker) => !taken.includes(worker));
    this.close();
    return taken;
  }

  /** Terminates every thread not taken. */
  close(): void {
    for (const worker of this.#idle) void worker.terminate();
    this.#idle = [];
  }
}
