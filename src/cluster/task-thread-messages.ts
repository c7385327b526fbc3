import type { OffsetsOwner } from '../connectors/kafka/offsets-owner.ts';
import type { ConnectorDefaults } from '../core/config/connector-defaults.ts';
import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import type { SerializedWeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { RestoreInfo } from '../runtime/deployment/restore-info.ts';
import type { TaskMetricsSnapshot } from '../runtime/metrics/task-metrics.ts';
import type { ControlSnapshot } from './relayed-control.ts';
import type { StagePlan } from './stage-plan.ts';
import type { TaskCheckpoint } from './task-checkpoint.ts';

/** What a member's task thread is started with (cluster-task-worker.ts): everything its tasks' runtime needs but its own connections. */
export interface TaskThreadInit {
  /** The thread's place in the member's pool, and how many threads held that place before it. */
  thread: number;
  incarnation: number;
  clusterId: string;
  jobModuleUrl: string;
  config: EnvironmentConfig & { checkpointing: NonNullable<EnvironmentConfig['checkpointing']> };
  graph: JobGraph;
  plan: StagePlan;
  taskCounts: readonly number[];
  transactionTimeoutMs: number;
  fromSavepoint: RestoreInfo | undefined;
  connectorDefaults: ConnectorDefaults;
  /** The member in the group now, and the control topic as the member read it. */
  owner: OffsetsOwner;
  control: ControlSnapshot;
}

/** A producer the member's main thread opened (InitProducerId: the task's earlier owners fenced); its sequences start again. */
export interface OpenedProducer {
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
}

/** An error as it crosses from a task thread: a WeirError keeps its code and hint. */
export type CrossingError = { weir: SerializedWeirError } | { message: string; stack: string | undefined };

/** Main thread -> task thread. `run` numbers one start of one task on the member (a task started again is a new run). */
export type ToTaskThread =
  | { type: 'owner'; owner: OffsetsOwner }
  | { type: 'control'; control: ControlSnapshot }
  | { type: 'start'; run: number; stage: string; task: number; open: OpenedProducer; restored: TaskCheckpoint | undefined }
  | { type: 'stop'; run: number }
  | { type: 'close' };

/** What a task thread reports of one run. */
export interface RunReport {
  run: number;
  snapshot: TaskMetricsSnapshot | undefined;
  completed: number;
  latestCheckpointId: number | undefined;
}

/** Task thread -> main thread. */
export type FromTaskThread =
  | { type: 'started'; run: number; restoredBytes: number; restoreMs: number }
  | { type: 'startFailed'; run: number; error: CrossingError }
  /** A run failed: `byGroup` when the group refused its commit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID), for the generation it carried (`committedWith`). */
  | { type: 'failed'; run: number; error: CrossingError; byGroup: boolean; committedWith: number | undefined }
  /** A run stopped (its open transaction aborted, no commit of it can follow): `latest` is the checkpoint it last committed, else the one it restored. */
  | { type: 'stopped'; run: number; latest: TaskCheckpoint | undefined }
  | { type: 'reports'; runs: RunReport[] }
  | { type: 'log'; line: string }
  | { type: 'closed' };
