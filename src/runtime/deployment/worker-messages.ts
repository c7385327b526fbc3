import type { OperatorSubtaskState } from '../../checkpoint/operator-subtask-state.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { SubtaskStateMetadata } from '../../checkpoint/storage/checkpoint-metadata.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { SerializedWeirError } from '../../core/errors/weir-error.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { TaskMetricsSnapshot } from '../metrics/task-metrics.ts';
import type { ExecutionPlan } from './execution-plan.ts';

/** The state of one operator in the checkpoint a job restores from, as workers need it. */
export interface RestoredOperatorState {
  uid: string;
  parallelism: number;
  subtasks: SubtaskStateMetadata[];
}

export interface RestoreInfo {
  checkpointId: number;
  /** The checkpoint's (or savepoint's) folder; state handles are relative to it. */
  folder: string;
  maxParallelism: number;
  operators: RestoredOperatorState[];
  /** A savepoint whose transactions were committed before it was reported: its committables must not be committed again. */
  transactionsCommitted: boolean;
}

export interface WorkerInit {
  workerIndex: number;
  jobModuleUrl: string;
  jobName: string;
  config: EnvironmentConfig;
  graph: JobGraph;
  plan: ExecutionPlan;
  attemptNumber: number;
  restore: RestoreInfo | undefined;
  checkpointFolder: string | undefined;
}

/** Main thread to worker. */
export type ToWorker =
  | { type: 'trigger'; location: CheckpointLocation; stop?: StopMode }
  | { type: 'complete'; checkpointId: number }
  | { type: 'abort'; checkpointId: number }
  | { type: 'finish' };

/** Worker to main thread. */
export type FromWorker =
  | { type: 'ready'; workerIndex: number }
  | { type: 'ack'; checkpointId: number; vertexId: number; subtaskIndex: number; operators: OperatorSubtaskState[]; alignmentMs: number; bytes: number }
  | { type: 'decline'; checkpointId: number; vertexId: number; subtaskIndex: number; reason: string }
  | { type: 'failed'; vertexName: string; subtaskIndex: number; error: SerializedWeirError }
  | { type: 'endOfData'; vertexId: number; subtaskIndex: number }
  | { type: 'notified'; checkpointId: number; vertexId: number; subtaskIndex: number }
  | { type: 'metrics'; tasks: TaskMetricsSnapshot[] }
  | { type: 'finished'; workerIndex: number };
