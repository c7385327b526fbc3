import type { ConnectionOptions } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import type { OffsetsOwner, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import type { Job } from '../graph/job.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { RestoreInfo } from '../runtime/deployment/restore-info.ts';
import type { StagePlan } from './stage-plan.ts';
import type { SavepointControlView } from './task-savepoints.ts';

/** What every task of a member shares. */
export interface MemberRuntime {
  clusterId: string;
  job: Job;
  config: EnvironmentConfig & { checkpointing: NonNullable<EnvironmentConfig['checkpointing']> };
  graph: JobGraph;
  plan: StagePlan;
  /** Per stage, its task count. */
  taskCounts: readonly number[];
  connections: ClusterConnections;
  driver: TransactionDriver;
  bootstrap: readonly BrokerAddress[];
  connection: ConnectionOptions;
  /** The member in the group now (its generation), for the offsets each checkpoint commits. */
  owner: () => OffsetsOwner;
  log: (line: string) => void;
  /** The cluster's control topic as the member read it: the savepoint under way, and the newest one asked for. */
  savepoints?: SavepointControlView;
  /** The savepoint the cluster starts from (`--from-savepoint`): a task without a checkpoint of its own restores from it. */
  fromSavepoint?: RestoreInfo | undefined;
}
