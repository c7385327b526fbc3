import type { ConnectionOptions } from '@platformatic/kafka';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { resolveKafkaConnection } from '../connectors/kafka/kafka-default-connection.ts';
import { brokerTransactionMaxTimeout } from '../connectors/kafka/kafka-preflight.ts';
import { TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import type { Logger } from '../core/logging/logger.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { RestoreInfo } from '../runtime/deployment/restore-info.ts';
import type { RunJobOptions } from '../runtime/jobmaster/job-client.ts';
import { loadJob } from '../runtime/jobmaster/load-job.ts';
import { everySourceBounded } from './cluster-end-watch.ts';
import { clusterSettings, planCluster } from './cluster-plan.ts';
import { ensureClusterTopics, existingPartitionCount } from './cluster-topics.ts';
import { ensureControlTopic } from './savepoint-control.ts';
import { clusterStartingSavepoint } from './savepoint-restore.ts';
import type { Stage, StagePlan } from './stage-plan.ts';
import { describeTaskTransactionTimeout, refuseShortTransactionTimeout, restoreReadTimeoutMs, taskTransactionTimeoutMs } from './task-transaction-timeout.ts';

/** The job and its settings, whose `cluster` (id, instanceId, sessionTimeout, threads) makes this process a member. */
export interface ClusterMemberOptions extends Pick<RunJobOptions, 'job' | 'config' | 'configFile' | 'fromSavepoint'> {
  log: Logger;
}

export type ClusterSettings = NonNullable<EnvironmentConfig['cluster']>;

/** What a member's main thread holds of its job: the plan, its connections and driver (for fencing), and what its task threads start with. */
export interface MemberSetup {
  options: ClusterMemberOptions & ClusterSettings;
  /** The job module's URL: every task thread loads it. */
  url: string;
  config: EnvironmentConfig & { checkpointing: NonNullable<EnvironmentConfig['checkpointing']> };
  graph: JobGraph;
  plan: StagePlan;
  taskCounts: readonly number[];
  /** Global task number -> stage and task. */
  tasks: { stage: Stage; task: number }[];
  connections: ClusterConnections;
  driver: TransactionDriver;
  bootstrap: readonly BrokerAddress[];
  connection: ConnectionOptions;
  fromSavepoint: RestoreInfo | undefined;
  /** Every source of the job is bounded: the cluster ends once every task has (cluster-end-watch.ts). */
  bounded: boolean;
  log: (line: string) => void;
}

/** Plans the job, creates its topics, sizes its tasks' transaction timeout and reads the savepoint it starts from. */
export async function setUpMember(memberOptions: ClusterMemberOptions): Promise<MemberSetup> {
  const log = (line: string) => memberOptions.log.info(line);
  const { url, config, streamGraph, graph } = await loadJob(memberOptions);
  const { cluster, checkpointing } = clusterSettings(config, graph.jobName);
  const options = { ...memberOptions, ...cluster };
  const kafka = resolveKafkaConnection({}, 'cluster mode (--cluster)');
  const connections = new ClusterConnections(kafka.bootstrap, { clientId: 'weir-cluster', ...kafka.connection, owner: `cluster "${options.id}"` });
  try {
    const { plan, taskCounts, tasks, topics } = await planCluster({ streamGraph, graph }, options.id, options.keyedTasks, (topic) =>
      existingPartitionCount(connections, topic),
    );
    const created = new Set(await ensureClusterTopics(connections, kafka.bootstrap, kafka.connection, topics));
    await ensureControlTopic(connections, kafka.bootstrap, kafka.connection, options.id);
    for (const stage of plan.stages) log(`cluster "${options.id}": stage "${stage.uid}", ${taskCounts[stage.id]} tasks`);
    for (const topic of topics)
      log(`cluster "${options.id}": ${topic.what}: topic ${topic.topic}, ${topic.partitions} partitions${created.has(topic.topic) ? ' (created)' : ''}`);
    const brokerMax = await brokerTransactionMaxTimeout(kafka.bootstrap, kafka.connection);
    const transactionTimeoutMs = taskTransactionTimeoutMs(brokerMax, checkpointing.interval);
    const tooShort = refuseShortTransactionTimeout(brokerMax, checkpointing.interval, transactionTimeoutMs);
    if (tooShort !== undefined) throw tooShort;
    log(`cluster "${options.id}": ${describeTaskTransactionTimeout(transactionTimeoutMs)}`);
    const fromSavepoint = await clusterStartingSavepoint({
      cluster: options.id,
      graph,
      path: memberOptions.fromSavepoint,
      bootstrap: kafka.bootstrap,
      connection: kafka.connection,
      checkpointTopic: plan.checkpointTopic,
      timeoutMs: restoreReadTimeoutMs(transactionTimeoutMs),
      log,
    });
    return {
      options,
      url,
      config: { ...config, checkpointing },
      graph,
      plan,
      taskCounts,
      tasks,
      connections,
      driver: new TransactionDriver(connections, { transactionTimeoutMs }),
      bootstrap: kafka.bootstrap,
      connection: kafka.connection,
      fromSavepoint,
      bounded: everySourceBounded(streamGraph),
      log,
    };
  } catch (error) {
    await connections.close();
    throw error;
  }
}
