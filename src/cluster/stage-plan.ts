import { createHash } from 'node:crypto';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { Partitioning } from '../graph/stream-graph.ts';

/**
 * Cluster mode's plan of a job: its graph cut into stages at every exchange (Kafka Streams'
 * sub-topologies), and the job's own Kafka topics, so each stage runs as tasks any member can own.
 *
 * - A **stage** is one job vertex (one chain of operators). Its first node names it (its uid).
 * - An **exchange** is each edge between stages: a Kafka topic the upstream stage writes
 *   exactly-once and the downstream one reads read_committed. A hash exchange has `keyedTasks`
 *   partitions (`cluster.keyedTasks`, by default cluster-plan.ts's defaultKeyedTasks): partition p holds the key groups
 *   of subtask p at that parallelism (KeyGroupRangeAssignment, as in one process), so keyed state
 *   moves with partitions; a rebalance or broadcast one has the downstream vertex's parallelism, or
 *   `keyedTasks` into a stage a hash exchange feeds too (broadcast state beside a keyed input: every
 *   task of the keyed stage gets every rule); a forward one (an operator
 *   feeding several others, a union, a side output: the edges a chain ends at) has the upstream
 *   stage's task count, and task N writes partition N, which task N downstream reads: records go
 *   where they go in one process.
 * - A stage's **task count** is its exchange topics' partition count, or, for a stage that starts
 *   at sources, its source topics' partition count (known when the job starts; so is a forward
 *   exchange's from such a stage, {@link resolveForwardExchanges}). It is fixed for the job's life.
 * - The **checkpoint topic** is compacted, keyed by task (task-checkpoint.ts).
 *
 * Topic names are `weir-<cluster>-<what>-h<8 hex>`: readable parts reduced to Kafka's characters,
 * and a hash of the full names, so two different edges or clusters never share a topic.
 */

export interface Stage {
  id: number;
  uid: string;
  /** Job vertex ids, in the graph's order. */
  vertices: number[];
  /** Stream node ids of its sources (a stage that starts at sources), else none. */
  sourceNodes: number[];
  /** The exchanges that feed it, by index into {@link StagePlan.exchanges}. */
  inputs: number[];
  /** Fixed by its exchange topics; undefined: its source topics' partition count, read at start. */
  taskCount: number | undefined;
}

export interface Exchange {
  /** The job graph edge it stands for. */
  edge: number;
  from: number;
  to: number;
  partitioning: Partitioning;
  topic: string;
  /** For a forward exchange from a stage that starts at sources: 0 until {@link resolveForwardExchanges}. */
  partitions: number;
}

export interface StagePlan {
  stages: Stage[];
  exchanges: Exchange[];
  checkpointTopic: string;
}

/** The Kafka topic names of a cluster: what the job creates and `weir doctor --cluster` checks. */
export function clusterTopicName(cluster: string, ...parts: string[]): string {
  const readable = [cluster, ...parts].map((part) => part.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60));
  const hash = createHash('sha256')
    .update([cluster, ...parts].join('\0'))
    .digest('hex')
    .slice(0, 8);
  return `weir-${readable.join('-')}-h${hash}`;
}

/** The stages and exchanges of `graph` in cluster `cluster`, each keyed stage with `keyed` tasks (at most maxParallelism: the config checks it). */
export function planStages(cluster: string, graph: JobGraph, keyed: number = graph.maxParallelism): StagePlan {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(cluster)) {
    throw new WeirError('INVALID_CONFIG', `--cluster ${JSON.stringify(cluster)}: a cluster id is 1 to 100 of A-Z a-z 0-9 . _ -`, {
      hint: 'give the job a cluster id such as payments-prod (it names the consumer group and the job’s topics)',
    });
  }
  // Stages: one per vertex (job-graph.ts chains whatever can run as one chain).
  const stages: Stage[] = graph.vertices.map((vertex, id) => ({
    id,
    uid: graph.nodes[vertex.nodeIds[0] as number]?.uid ?? `stage-${id}`,
    vertices: [vertex.id],
    sourceNodes: vertex.isSource ? [vertex.nodeIds[0] as number] : [],
    inputs: [],
    taskCount: undefined,
  }));

  const exchanges: Exchange[] = [];
  for (const edge of graph.edges) {
    const sourceUid = graph.nodes[graph.vertices[edge.source]?.nodeIds.at(-1) as number]?.uid ?? String(edge.source);
    const targetUid = graph.nodes[graph.vertices[edge.target]?.nodeIds[0] as number]?.uid ?? String(edge.target);
    const partitions = edge.partitioning === 'hash' ? keyed : edge.partitioning === 'forward' ? 0 : (graph.vertices[edge.target]?.parallelism as number);
    const topic = clusterTopicName(cluster, 'x', sourceUid, targetUid, String(edge.inputIndex), edge.outputTag ?? '');
    (stages[edge.target] as Stage).inputs.push(exchanges.length);
    exchanges.push({ edge: edge.id, from: edge.source, to: edge.target, partitioning: edge.partitioning, topic, partitions });
  }
  for (const stage of stages) {
    if (stage.sourceNodes.length > 0 && stage.inputs.length > 0) throw unsupported(`stage "${stage.uid}" reads both sources and an exchange`);
    // Known now unless a forward exchange feeds it (resolveForwardExchanges, at start).
    const inputs = stage.inputs.map((index) => exchanges[index] as Exchange);
    // A keyed stage has `keyed` tasks, each a range of key groups: what is broadcast into it beside its keyed input
    // (broadcast state's rules) goes to each of them, as to every subtask in one process, and what is
    // rebalanced into it is spread over them (it was refused before: partition counts that differ).
    if (inputs.some((exchange) => exchange.partitioning === 'hash')) {
      for (const exchange of inputs) if (exchange.partitioning === 'rebalance' || exchange.partitioning === 'broadcast') exchange.partitions = keyed;
    }
    const counts = new Set(inputs.map((exchange) => exchange.partitions));
    if (inputs.length > 0 && inputs.every((exchange) => exchange.partitioning !== 'forward') && counts.size === 1) stage.taskCount = [...counts][0];
  }
  return { stages, exchanges, checkpointTopic: clusterTopicName(cluster, 'checkpoints') };
}

/**
 * Every stage's task count, and every forward exchange's partition count (its upstream stage's
 * task count), in the graph's order, given the task counts of the stages that start at sources
 * (`sourceCounts`, by stage id). A stage whose exchanges disagree on their partition counts is
 * refused by name.
 */
export function resolveForwardExchanges(plan: StagePlan, sourceCounts: readonly (number | undefined)[]): number[] {
  const counts: number[] = [];
  for (const stage of plan.stages) {
    if (stage.sourceNodes.length > 0) {
      const count = sourceCounts[stage.id];
      if (count === undefined) throw new Error(`no task count for source stage ${stage.uid}`);
      counts[stage.id] = count;
      stage.taskCount = count;
      continue;
    }
    const inputs = stage.inputs.map((index) => plan.exchanges[index] as Exchange);
    const fixed = new Set(inputs.filter((exchange) => exchange.partitioning !== 'forward').map((exchange) => exchange.partitions));
    if (fixed.size > 1) throw unsupported(`stage "${stage.uid}" reads exchanges of different partition counts (${[...fixed].join(', ')})`);
    const upstream = inputs
      .filter((exchange) => exchange.partitioning === 'forward')
      .map((exchange) => {
        const count = counts[exchange.from];
        if (count === undefined) throw new Error(`stage ${stage.uid} comes before the stage it reads (${exchange.from})`);
        return count;
      });
    const count = fixed.size === 1 ? ([...fixed][0] as number) : Math.max(...upstream);
    for (const exchange of inputs) {
      if (exchange.partitioning !== 'forward') continue;
      exchange.partitions = count;
      // Task counts that differ (dead letters of a source joined into a keyed stage's sink): as
      // a forward edge between different parallelisms in one process, a rebalance.
      if (counts[exchange.from] !== count) exchange.partitioning = 'rebalance';
    }
    stage.taskCount = count;
    counts[stage.id] = count;
  }
  return counts;
}

function unsupported(what: string): WeirError {
  return new WeirError('INVALID_CONFIG', `cluster mode cannot run this job yet: ${what}`, {
    hint: 'run it without --cluster, or give the operators after an exchange their own chain',
  });
}
