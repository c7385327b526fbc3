import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import type { Sink } from '../core/connector/sink.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { LoadedJob } from '../runtime/jobmaster/load-job.ts';
import { type ClusterTopic, clusterTopics } from './cluster-topics.ts';
import { planStages, resolveForwardExchanges, type Stage, type StagePlan } from './stage-plan.ts';
import { taskSinkKind } from './task-sink.ts';

/** A job as cluster mode runs it: its stages, each stage's task count, every task by number, and the job's own topics. */
export interface ClusterPlan {
  plan: StagePlan;
  /** Per stage, its task count. */
  taskCounts: number[];
  /** Every task of the job by its number in the group's assignment. */
  tasks: { stage: Stage; task: number }[];
  topics: ClusterTopic[];
}

/**
 * Plans a job for cluster mode, refusing by name what cluster mode cannot run yet (an exactly-once
 * sink that neither writes into a task's transaction nor is a two-phase-commit sink, task-sink.ts;
 * a source reinterpreted as keyed; a stage with more tasks than maxParallelism). A stage reading a
 * source has one task per split (a Kafka source: per partition), read from the brokers now; every
 * other stage's count is its exchange topics' partition count (a keyed stage's: `keyedTasks`, else
 * {@link defaultKeyedTasks}; a forward exchange's: its upstream stage's task count).
 * `existingPartitions` tells the partition count of a topic that exists (a cluster that ran before).
 */
export async function planCluster(
  loaded: Pick<LoadedJob, 'streamGraph' | 'graph'>,
  clusterId: string,
  keyedTasks?: number,
  existingPartitions?: (topic: string) => Promise<number | undefined>,
): Promise<ClusterPlan> {
  const { streamGraph, graph } = loaded;
  for (const node of streamGraph.nodes) {
    if (node.kind === 'sink') {
      const uid = graph.nodes[node.id]?.uid ?? node.name;
      const kind = taskSinkKind(node.sink as Sink<unknown>, uid);
      if (kind instanceof WeirError) throw kind;
    }
  }
  // Which stages start at sources, and the topics' names, do not depend on the keyed task count.
  const draft = planStages(clusterId, graph);
  const sourceCounts = await readSourceCounts(loaded, draft);
  const keyed = keyedTasks ?? (await defaultKeyedTasks(draft, sourceCounts, graph.maxParallelism, existingPartitions));
  const plan = planStages(clusterId, graph, keyed);
  for (const stage of plan.stages) {
    if (stage.sourceNodes.length === 0) continue;
    const node = streamGraph.node(stage.sourceNodes[0] as number);
    // A source reinterpreted as keyed (reinterpretAsKeyedStream): its split p holds key group p, so
    // its stage has one task per key group, and task p (subtask p of maxParallelism) owns key group p.
    if (node.kind === 'source' && node.keyGroupAssignment === true && sourceCounts[stage.id] !== graph.maxParallelism) {
      throw new WeirError(
        'REINTERPRET_PARTITIONS',
        `cluster mode: source "${graph.nodes[node.id]?.uid}" is reinterpreted as keyed, so its partition p must hold key group p, but it has ${sourceCounts[stage.id]} partitions for the job's maxParallelism of ${graph.maxParallelism}`,
        {
          hint: `give the job maxParallelism ${sourceCounts[stage.id]} (the topic's partition count), write the topic with partitioner: keyGroupPartitioner, or use keyBy`,
        },
      );
    }
  }
  const taskCounts = resolveForwardExchanges(plan, sourceCounts);
  for (const stage of plan.stages) {
    // As one process refuses a parallelism above maxParallelism: a savepoint's canonical metadata could not hold the stage.
    const count = taskCounts[stage.id] as number;
    if (count > graph.maxParallelism) {
      throw new WeirError(
        'INVALID_PARALLELISM',
        `cluster mode: stage "${stage.uid}" has ${count} tasks (one per input partition), above maxParallelism ${graph.maxParallelism}`,
        {
          hint: `set maxParallelism (--max-parallelism) to at least ${count}; it is fixed for the life of a job, so choose it before the job's first checkpoint`,
        },
      );
    }
  }
  const tasks = plan.stages.flatMap((stage) => Array.from({ length: taskCounts[stage.id] as number }, (_, task) => ({ stage, task })));
  return { plan, taskCounts, tasks, topics: clusterTopics(plan, tasks.length) };
}

/** The task count of each stage that starts at sources (one task per split: a Kafka source's partitions, read now), by stage id. */
async function readSourceCounts(loaded: Pick<LoadedJob, 'streamGraph'>, plan: StagePlan): Promise<number[]> {
  const sourceCounts: number[] = [];
  for (const stage of plan.stages) {
    if (stage.sourceNodes.length === 0) continue;
    const node = loaded.streamGraph.node(stage.sourceNodes[0] as number);
    if (node.kind !== 'source') throw new Error(`stage ${stage.uid} starts at no source`);
    sourceCounts[stage.id] = (await node.source.createInitialSplits(1)).length;
  }
  return sourceCounts;
}

/**
 * A keyed stage's task count when `cluster.keyedTasks` is not set. A cluster that ran before keeps
 * the count its keyed exchange topics were created with (whatever its Weir's default was then);
 * a new one takes the largest task count of its source stages (a Kafka source's partition count),
 * at most maxParallelism, as Kafka Streams sizes a repartition topic by its sub-topology's input
 * topics. One key group per task (maxParallelism tasks) made a keyed stage of 128 tasks by default,
 * each with its own transactions, exchange reads and checkpoints, for 4 input partitions.
 */
export async function defaultKeyedTasks(
  plan: StagePlan,
  sourceCounts: readonly (number | undefined)[],
  maxParallelism: number,
  existingPartitions?: (topic: string) => Promise<number | undefined>,
): Promise<number> {
  if (existingPartitions !== undefined) {
    for (const exchange of plan.exchanges) {
      if (exchange.partitioning !== 'hash') continue;
      const partitions = await existingPartitions(exchange.topic);
      if (partitions !== undefined) return partitions;
    }
  }
  const largest = Math.max(0, ...sourceCounts.filter((count) => count !== undefined));
  return largest === 0 ? maxParallelism : Math.min(largest, maxParallelism);
}

/** A job's cluster settings and its checkpointing, refused by name when it has no cluster id, no exactly-once checkpoints, or incremental ones. */
export function clusterSettings(
  config: EnvironmentConfig,
  jobName: string,
): { cluster: NonNullable<EnvironmentConfig['cluster']>; checkpointing: NonNullable<EnvironmentConfig['checkpointing']> } {
  if (config.cluster === undefined) {
    throw new WeirError('INVALID_CONFIG', `job "${jobName}" has no cluster id`, {
      hint: 'run it with --cluster <id> (or give its config cluster: { id })',
    });
  }
  const checkpointing = config.checkpointing;
  if (checkpointing === undefined || checkpointing.mode !== 'exactly-once') {
    throw new WeirError(
      'NO_CHECKPOINTING',
      `cluster mode runs exactly-once checkpoints, and job "${jobName}" has ${checkpointing ? 'at-least-once ones' : 'none'}`,
      {
        hint: 'give the job checkpointing: { interval, storage } (or --checkpoint-interval and --checkpoint-storage, a folder or s3:// every member shares)',
      },
    );
  }
  if (checkpointing.incremental === true) {
    // Each task keeps its own checkpoint folder and deletes the previous checkpoint once the next is committed.
    throw new WeirError('INVALID_CONFIG', `job "${jobName}": checkpointing.incremental is not built for cluster mode yet`, {
      hint: 'drop checkpointing.incremental for cluster mode (each task checkpoints only its own key groups), or run the job in one process',
    });
  }
  if (checkpointing.localRecovery === true) {
    // A task's storage is its own (task-storage.ts); copies on the member that last ran it would rarely be where it runs next.
    throw new WeirError('INVALID_CONFIG', `job "${jobName}": checkpointing.localRecovery is not built for cluster mode yet`, {
      hint: 'drop checkpointing.localRecovery (--local-recovery) for cluster mode, or run the job in one process',
    });
  }
  return { cluster: config.cluster, checkpointing };
}
