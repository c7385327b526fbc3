/**
 * The entry point of every worker thread: builds the worker's tasks from the job module and
 * relays messages between them and the job master on the main thread.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { setConnectorDefaults } from '../../core/config/connector-defaults.ts';
import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { releaseStartupHeap } from '../../core/heap/release-startup-heap.ts';
import type { FromWorker, ToWorker, WorkerInit } from '../deployment/worker-messages.ts';
import { TaskExecutor } from './task-executor.ts';

const { init, peers } = workerData as { init: WorkerInit; peers: Map<number, MessagePort> };
// Before the job module loads: its connectors read these when they connect.
setConnectorDefaults(init.connectorDefaults);
const port = parentPort;
if (port === null) throw new Error('worker-main runs only in a worker thread');
const toMaster = (message: FromWorker) => port.postMessage(message);
const executor = new TaskExecutor(init, peers, toMaster);

port.on('message', (message: ToWorker) => executor.handle(message));

try {
  await executor.start();
  const localRecovery = executor.localRecoveryReads;
  toMaster(localRecovery === undefined ? { type: 'ready', workerIndex: init.workerIndex } : { type: 'ready', workerIndex: init.workerIndex, localRecovery });
  // After this tick (the ready message goes out first): the worker's start-up garbage, before records flow.
  setImmediate(() => {
    try {
      releaseStartupHeap();
    } catch {
      // Only memory is at stake: the worker runs on with the heap it has.
    }
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
