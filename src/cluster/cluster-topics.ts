import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import { hasKafkaError } from '../connectors/kafka/kafka-error-ids.ts';
import { loadAdmin } from '../connectors/kafka/kafka-protocol.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { StagePlan } from './stage-plan.ts';

/** One of a cluster's own topics, as the job needs it. */
export interface ClusterTopic {
  topic: string;
  partitions: number;
  /** The checkpoint topic is compacted (the latest record per task is what counts); exchanges are not. */
  compacted: boolean;
  what: string;
}

/** The topics a cluster's plan needs: one per exchange, and the checkpoint topic (one partition per 16 tasks, at least 1). */
export function clusterTopics(plan: StagePlan, taskCount: number): ClusterTopic[] {
  return [
    ...plan.exchanges.map((exchange) => ({
      topic: exchange.topic,
      partitions: exchange.partitions,
      compacted: false,
      what: `the ${exchange.partitioning} exchange into stage "${plan.stages[exchange.to]?.uid}"`,
    })),
    { topic: plan.checkpointTopic, partitions: Math.max(1, Math.ceil(taskCount / 16)), compacted: true, what: 'the checkpoint topic' },
  ];
}

/**
 * Creates the cluster's topics that are missing (the job owns them: created by whichever member
 * starts first; a topic another member created a moment before is fine) and checks the ones there
 * have the partition count the plan needs: that count is fixed for the job's life, so a topic of
 * another count is refused by name, never used. Returns what it created.
 */
export async function ensureClusterTopics(
  connections: ClusterConnections,
  bootstrap: readonly BrokerAddress[],
  connection: ConnectionOptions,
  topics: readonly ClusterTopic[],
): Promise<string[]> {
  const existing = await partitionCounts(connections, topics);
  for (const wanted of topics) {
    const count = existing.get(wanted.topic);
    if (count !== undefined && count !== wanted.partitions) throw mismatch(wanted, count);
  }
  const missing = topics.filter((topic) => !existing.has(topic.topic));
  if (missing.length === 0) return [];
  const admin = new (await loadAdmin())({ clientId: 'weir-cluster-topics', bootstrapBrokers: [formatBootstrap(bootstrap)], ...connection });
  const created: string[] = [];
  try {
    for (const topic of missing) {
      try {
        await admin.createTopics({
          topics: [topic.topic],
          partitions: topic.partitions,
          replicas: -1, // the broker's default.replication.factor
          configs: topic.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
        });
        created.push(topic.topic);
      } catch (error) {
        if (!hasKafkaError(error, 'TOPIC_ALREADY_EXISTS')) {
          throw new WeirError(
            'CLUSTER_MEMBERSHIP_FAILED',
            `cannot create ${topic.what}, topic "${topic.topic}" (${topic.partitions} partitions): ${(error as Error).message}`,
            {
              hint: 'the member needs the right to create topics (CREATE on the cluster), or create the topics `weir doctor --cluster` lists beforehand',
              fault: 'external',
              cause: error,
            },
          );
        }
      }
    }
  } finally {
    await admin.close();
  }
  // Whoever created them, they must be there (the brokers learn of a new topic a moment after it
  // is created) and have the count the plan needs.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const after = await partitionCounts(connections, missing);
    for (const wanted of missing) {
      const count = after.get(wanted.topic);
      if (count !== undefined && count !== wanted.partitions) throw mismatch(wanted, count);
    }
    if (after.size === missing.length) return created;
    if (Date.now() > deadline) {
      throw new WeirError(
        'CLUSTER_MEMBERSHIP_FAILED',
        `the cluster's topics ${missing
          .filter((topic) => !after.has(topic.topic))
          .map((topic) => `"${topic.topic}"`)
          .join(', ')} do not show in the brokers' metadata 30 s after their creation`,
        {
          hint: 'check the brokers (their controller, and that they can create topics)',
          fault: 'external',
          retriable: true,
        },
      );
    }
    await sleep(100);
  }
}

/** What `weir doctor --cluster` says of each topic: there with the count the plan needs, missing (a member creates it), or of another count (refused). */
export async function checkClusterTopics(
  connections: ClusterConnections,
  topics: readonly ClusterTopic[],
): Promise<{ topic: ClusterTopic; state: 'ok' | 'missing' | 'mismatch'; partitions: number | undefined }[]> {
  const counts = await partitionCounts(connections, topics);
  return topics.map((topic) => {
    const partitions = counts.get(topic.topic);
    return { topic, partitions, state: partitions === undefined ? 'missing' : partitions === topic.partitions ? 'ok' : 'mismatch' };
  });
}

/** The partition count of each of these topics that exists. */
async function partitionCounts(connections: ClusterConnections, topics: readonly ClusterTopic[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const { topic } of topics) {
    const partitions = await existingPartitionCount(connections, topic);
    if (partitions !== undefined) counts.set(topic, partitions);
  }
  return counts;
}

/** The partition count of `topic`, or undefined when it does not exist. */
export async function existingPartitionCount(connections: ClusterConnections, topic: string): Promise<number | undefined> {
  try {
    return (await connections.topic(topic)).partitions.length;
  } catch (error) {
    if (error instanceof WeirError && error.code === 'UNKNOWN_TOPIC') return undefined;
    throw error;
  }
}

function mismatch(wanted: ClusterTopic, count: number): WeirError {
  return new WeirError('CLUSTER_TASK_COUNT_MISMATCH', `${wanted.what}, topic "${wanted.topic}", has ${count} partitions; the job needs ${wanted.partitions}`, {
    hint: 'a cluster’s task counts are fixed for its life (maxParallelism, cluster.keyedTasks, a stage’s parallelism): run the job with the settings it started with, or start it under a new --cluster id',
    fault: 'user',
  });
}
