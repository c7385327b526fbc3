import { createHash } from 'node:crypto';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { Partitioning } from '../graph/stream-graph.ts';

/**
 * Cluster mode's plan of a job: its graph cut into stages at every exchange (Kafka Streams'
 * sub-topologies), and the job's own Kafka topics, so each stage runs as tasks any member can own.
 *
 * - A **stage** is a set of job vertices joined by forward edges: the records of one task never
 *   leave its member. Its first vertex's first node names it (its uid).
 * - An **exchange** is each hash, rebalance or broadcast edge between stages: a Kafka topic the
 *   upstream stage writes exactly-once and the downstream one reads read_committed. A hash
 *   exchange has maxParallelism partitions, so a key's partition is its key group and keyed state
 *   moves with partitions; a rebalance or broadcast one has the downstream vertex's parallelism.
 * - A stage's **task count** is its exchange topics' partition count, or, for a stage that starts
 *   at sources, its source topics' partition count (known when the job starts). It is fixed for
 *   the job's life.
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
  partitioning: Exclude<Partitioning, 'forward'>;
  topic: string;
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

export function planStages(cluster: string, graph: JobGraph): StagePlan {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(cluster)) {
    throw new WeirError('INVALID_CONFIG', `--cluster ${JSON.stringify(cluster)}: a cluster id is 1 to 100 of A-Z a-z 0-9 . _ -`, {
      hint: 'give the job a cluster id such as payments-prod (it names the consumer group and the job’s topics)',
    });
  }
  // Stages: vertices joined by forward edges (union-find).
  const parent = graph.vertices.map((vertex) => vertex.id);
  const find = (id: number): number => {
    let root = id;
    while (parent[root] !== root) root = parent[root] as number;
    parent[id] = root;
    return root;
  };
  for (const edge of graph.edges) if (edge.partitioning === 'forward') parent[find(edge.target)] = find(edge.source);
  const stageOfRoot = new Map<number, number>();
  const stages: Stage[] = [];
  for (const vertex of graph.vertices) {
    const root = find(vertex.id);
    let stageId = stageOfRoot.get(root);
    if (stageId === undefined) {
      stageId = stages.length;
      stageOfRoot.set(root, stageId);
      const head = graph.nodes[vertex.nodeIds[0] as number];
      stages.push({ id: stageId, uid: head?.uid ?? `stage-${stageId}`, vertices: [], sourceNodes: [], inputs: [], taskCount: undefined });
    }
    const stage = stages[stageId] as Stage;
    stage.vertices.push(vertex.id);
    if (vertex.isSource) stage.sourceNodes.push(vertex.nodeIds[0] as number);
  }
  const stageOf = (vertex: number) => stageOfRoot.get(find(vertex)) as number;

  const exchanges: Exchange[] = [];
  for (const edge of graph.edges) {
    if (edge.partitioning === 'forward') continue;
    const from = stageOf(edge.source);
    const to = stageOf(edge.target);
    const sourceUid = graph.nodes[graph.vertices[edge.source]?.nodeIds.at(-1) as number]?.uid ?? String(edge.source);
    const targetUid = graph.nodes[graph.vertices[edge.target]?.nodeIds[0] as number]?.uid ?? String(edge.target);
    if (from === to) {
      throw unsupported(`the ${edge.partitioning} edge from "${sourceUid}" to "${targetUid}" lies inside one stage (forward edges join both ends)`);
    }
    const partitions = edge.partitioning === 'hash' ? graph.maxParallelism : (graph.vertices[edge.target]?.parallelism as number);
    const topic = clusterTopicName(cluster, 'x', sourceUid, targetUid, String(edge.inputIndex), edge.outputTag ?? '');
    (stages[to] as Stage).inputs.push(exchanges.length);
    exchanges.push({ edge: edge.id, from, to, partitioning: edge.partitioning, topic, partitions });
  }
  for (const stage of stages) {
    const counts = new Set(stage.inputs.map((index) => (exchanges[index] as Exchange).partitions));
    if (stage.sourceNodes.length > 0 && stage.inputs.length > 0) {
      throw unsupported(`stage "${stage.uid}" reads both sources and an exchange`);
    }
    if (counts.size > 1) throw unsupported(`stage "${stage.uid}" reads exchanges of different partition counts (${[...counts].join(', ')})`);
    stage.taskCount = counts.size === 1 ? [...counts][0] : undefined;
  }
  return { stages, exchanges, checkpointTopic: clusterTopicName(cluster, 'checkpoints') };
}

function unsupported(what: string): WeirError {
  return new WeirError('INVALID_CONFIG', `cluster mode cannot run this job yet: ${what}`, {
    hint: 'run it without --cluster, or give the operators after an exchange their own chain',
  });
}
