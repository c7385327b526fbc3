/**
 * The entry point of every worker thread: builds the worker's tasks from the job module and
 * relays messages between them and the job master on the main thread.
 */
import { once } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { setConnectorDefaults } from '../../core/config/connector-defaults.ts';
import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { releaseStartupHeap } from '../../core/heap/release-startup-heap.ts';
import { loadJobModule } from '../deployment/job-module.ts';
import type { FromWorker, ToWorker, WarmWorkerData, WorkerStart } from '../deployment/worker-messages.ts';
import { TaskExecutor } from './task-executor.ts';

const port = parentPort;
if (port === null) throw new Error('worker-main runs only in a worker thread');

/**
 * The worker's start: its workerData, or, for a thread started before its job (a warm worker:
 * runtime/jobmaster/warm-workers.ts), the first message, once the job module is loaded (an error
 * loading it is left to the executor's own load, which reports it as the job's).
 */
async function workerStart(): Promise<WorkerStart> {
  const data = workerData as WorkerStart | WarmWorkerData;
  if (!('warm' in data)) return data;
  // Before the job module loads: its connectors read these when they connect.
  setConnectorDefaults(data.warm.connectorDefaults);
  const loaded = loadJobModule(data.warm.jobModuleUrl).catch(() => undefined);
  const [start] = (await once(port as NonNullable<typeof port>, 'message')) as [WorkerStart];
  await loaded;
  return start;
}

const { init, peers } = await workerStart();
setConnectorDefaults(init.connectorDefaults);
const toMaster = (message: FromWorker) => port.postMessage(message);
const executor = new TaskExecutor(init, peers, toMaster);

/**
 * The worker's start-up garbage (what loading the job module left in its old space) goes in one
 * full collection, but not on a restart's critical path: after the first checkpoint completed (the
 * job's output is flowing again by then), or once the tasks run when nothing checkpoints.
 */
let startupHeap: 'held' | 'released' = 'held';
const releaseAfter = (message: ToWorker): void => {
  if (startupHeap === 'released') return;
  if (message.type !== 'complete' && !(message.type === 'run' && init.config.checkpointing === undefined)) return;
  startupHeap = 'released';
  setImmediate(() => {
    try {
      releaseStartupHeap();
    } catch {
      // Only memory is at stake: the worker runs on with the heap it has.
    }
  });
};

port.on('message', (message: ToWorker) => {
  executor.handle(message);
  releaseAfter(message);
});

try {
  await executor.start();
  const localRecovery = executor.localRecoveryReads;
  toMaster({
    type: 'ready',
    workerIndex: init.workerIndex,
    ...(localRecovery === undefined ? {} : { localRecovery }),
    ...(executor.restoredIncompletely ? { restoredIncompletely: true } : {}),
  });
} catch (error) {
  const weirError =
    error instanceof WeirError
      ? error
      : new WeirError(
          'TASK_FAILED',
          `worker ${init.workerIndex} failed to start: ${error instanceof Error ? withUserCodeLocation(error.message, error.stack) : String(error)}`,
        );
  if (!(error instanceof WeirError) && error instanceof Error && error.stack) weirError.stack = error.stack;
  toMaster({ type: 'failed', vertexName: `worker ${init.workerIndex}`, subtaskIndex: -1, error: weirError.serialize() });
}
