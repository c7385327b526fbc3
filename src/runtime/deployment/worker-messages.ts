import type { CheckpointFailure } from '../../checkpoint/checkpoint-failure-reason.ts';
import type { OperatorSubtaskState } from '../../checkpoint/operator-subtask-state.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { LocalRecoveryReads } from '../../checkpoint/storage/local-recovery-storage.ts';
import type { ConnectorDefaults } from '../../core/config/connector-defaults.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { SerializedWeirError } from '../../core/errors/weir-error.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { TaskMetricsSnapshot } from '../metrics/task-metrics.ts';
import type { ExecutionPlan } from './execution-plan.ts';
import type { RestoreInfo } from './restore-info.ts';

/** What a worker thread starts from (its workerData, with the ports to the other workers). */
export interface WorkerInit {
  workerIndex: number;
  jobModuleUrl: string;
  jobName: string;
  config: EnvironmentConfig;
  graph: JobGraph;
  plan: ExecutionPlan;
  attemptNumber: number;
  restore: RestoreInfo | undefined;
  /** The checkpoint storage's root (`checkpointing.storage`), undefined without checkpointing. */
  checkpointStorage: string | undefined;
  /** The connection settings the command line gave the job's connectors (core/config/connector-defaults.ts): in memory only, never persisted. */
  connectorDefaults: ConnectorDefaults;
}

/** A worker thread started before its job (runtime/jobmaster/warm-workers.ts): it loads the job module, then waits for its {@link WorkerStart}. */
export interface WarmWorkerData {
  warm: { jobModuleUrl: string; connectorDefaults: ConnectorDefaults };
}

/** A worker's start: its workerData, or the first message a warm worker gets (the ports transferred with it). */
export interface WorkerStart {
  init: WorkerInit;
  peers: Map<number, import('node:worker_threads').MessagePort>;
}

/** Main thread to worker. */
export type ToWorker =
  | { type: 'run' }
  | { type: 'trigger'; location: CheckpointLocation; stop?: StopMode }
  | { type: 'complete'; checkpointId: number }
  | { type: 'abort'; checkpointId: number }
  | { type: 'finish' };

/** Worker to main thread. */
export type FromWorker =
  /** Its tasks are open; with local recovery, what their restore read from the local copies and what from the storage. */
  /** `restoredIncompletely`: a task's restore left work of the restored snapshot to a later checkpoint (it is not recorded as committed). */
  | { type: 'ready'; workerIndex: number; localRecovery?: LocalRecoveryReads; restoredIncompletely?: boolean }
  | {
      type: 'ack';
      checkpointId: number;
      vertexId: number;
      subtaskIndex: number;
      operators: OperatorSubtaskState[];
      alignmentMs: number;
      bytes: number;
      /** The task stood still for its checkpoint (snapshot hooks, the backends' synchronous part), and then wrote its state while records flowed. */
      syncMs?: number;
      asyncMs?: number;
    }
  | { type: 'decline'; checkpointId: number; vertexId: number; subtaskIndex: number; failure: CheckpointFailure }
  | { type: 'failed'; vertexName: string; subtaskIndex: number; error: SerializedWeirError }
  | { type: 'endOfData'; vertexId: number; subtaskIndex: number }
  | { type: 'notified'; checkpointId: number; vertexId: number; subtaskIndex: number }
  | { type: 'metrics'; tasks: TaskMetricsSnapshot[] }
  | { type: 'finished'; workerIndex: number };
