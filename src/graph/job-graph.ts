import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { checkParallelism } from '../state/key-group-range-assignment.ts';
import { CHANNEL_STATE_UID_SUFFIX, channelStateHead } from './channel-state-uid.ts';
import type { Partitioning, StreamGraph } from './stream-graph.ts';

/** A chain of operators that run in one task, calling each other directly (Flink's JobVertex). */
export interface JobVertex {
  id: number;
  /** Stream node ids, head first. */
  nodeIds: number[];
  name: string;
  parallelism: number;
  isSource: boolean;
  isSink: boolean;
  /** Whether the head operator is keyed (its input is hash-partitioned). */
  keyed: boolean;
}

/** A data exchange between two vertices. `streamEdge` indexes StreamGraph.edges (for the key selector). */
export interface JobEdge {
  id: number;
  source: number;
  target: number;
  partitioning: Partitioning;
  streamEdge: number;
  /** Which input of the target's head operator it feeds (1: the second input of connect and joins). */
  inputIndex: number;
  /** The side output it carries (an OutputTag's id); undefined: the main output. */
  outputTag: string | undefined;
}

/** The physical plan: plain data (no functions), so it can be sent to worker threads. */
export interface JobGraph {
  jobName: string;
  vertices: JobVertex[];
  edges: JobEdge[];
  /** uid and name of every stream node, by node id. */
  nodes: { id: number; uid: string; name: string; kind: 'source' | 'operator' | 'sink' }[];
  maxParallelism: number;
}

/**
 * Turns the logical graph into the physical one: gives every node its uid and parallelism, and
 * chains a node into its predecessor when the edge between them is `forward`, both have the same
 * parallelism and neither branches. A forward edge between different parallelisms becomes a
 * rebalance, as in Flink.
 */
export function buildJobGraph(jobName: string, graph: StreamGraph, config: EnvironmentConfig): JobGraph {
  const parallelismOf = graph.nodes.map((node) => node.parallelism ?? config.parallelism);
  const uids = new Map<string, string>();
  const nodes = graph.nodes.map((node, index) => {
    const parallelism = parallelismOf[index] as number;
    checkParallelism(parallelism, config.maxParallelism, `parallelism of operator "${node.name}"`);
    const uid = node.uid === '' ? `${node.kind === 'source' || node.kind === 'sink' ? node.kind : node.name}-${node.id}` : node.uid;
    if (channelStateHead(uid) !== undefined) {
      throw new WeirError(
        'INVALID_UID',
        `operator "${node.name}" has uid "${uid}", which ends in "${CHANNEL_STATE_UID_SUFFIX}": that suffix names the records in flight an unaligned checkpoint stores`,
        {
          hint: `give the operator a uid that does not end in "${CHANNEL_STATE_UID_SUFFIX}"`,
        },
      );
    }
    const clash = uids.get(uid);
    if (clash !== undefined) {
      throw new WeirError('DUPLICATE_UID', `operators "${clash}" and "${node.name}" have the same uid "${uid}"`, { hint: 'give every operator a unique uid' });
    }
    uids.set(uid, node.name);
    return { id: node.id, uid, name: node.name, kind: node.kind };
  });
  if (!graph.nodes.some((node) => node.kind === 'source')) {
    throw new WeirError('EMPTY_JOB', `job "${jobName}" has no source`, { hint: 'start a stream with env.fromSource(...) in build(env)' });
  }

  const partitioningOf = graph.edges.map((edge) =>
    edge.partitioning === 'forward' && parallelismOf[edge.source] !== parallelismOf[edge.target] ? 'rebalance' : edge.partitioning,
  );
  checkWatermarks(graph);
  graph.edges.forEach((edge, index) => {
    const target = graph.node(edge.target);
    if (target.kind !== 'operator' || target.reinterpretedKeyed !== true || partitioningOf[index] === 'forward') return;
    throw new WeirError(
      'REINTERPRET_NOT_FORWARD',
      `operator "${target.name}" reads a stream reinterpreted as keyed, but its input "${graph.node(edge.source).name}" reaches it by ${partitioningOf[index]}: records would not stay with their key group's subtask`,
      { hint: 'give the operator the parallelism of its input (reinterpretAsKeyedStream keeps records where they are), or use keyBy' },
    );
  });

  const chainsInto = (target: number): number | undefined => {
    const inputs = graph.edges.map((edge, index) => ({ edge, index })).filter(({ edge }) => edge.target === target);
    if (inputs.length !== 1) return undefined;
    const { edge, index } = inputs[0] as (typeof inputs)[number];
    if (partitioningOf[index] !== 'forward') return undefined;
    if (edge.outputTag !== undefined) return undefined; // side outputs always cross a channel
    if (graph.outputsOf(edge.source).length !== 1) return undefined;
    return edge.source;
  };

  const vertexOf = new Map<number, number>();
  const vertices: JobVertex[] = [];
  for (const node of graph.nodes) {
    const predecessor = node.kind === 'source' ? undefined : chainsInto(node.id);
    if (predecessor !== undefined) {
      const vertex = vertices[vertexOf.get(predecessor) as number] as JobVertex;
      vertex.nodeIds.push(node.id);
      vertex.name = `${vertex.name} -> ${node.name}`;
      vertex.isSink ||= node.kind === 'sink';
      vertexOf.set(node.id, vertex.id);
      continue;
    }
    const keyed = graph.inputsOf(node.id).some((edge) => edge.partitioning === 'hash') || (node.kind === 'operator' && node.reinterpretedKeyed === true);
    vertices.push({
      id: vertices.length,
      nodeIds: [node.id],
      name: node.name,
      parallelism: parallelismOf[node.id] as number,
      isSource: node.kind === 'source',
      isSink: node.kind === 'sink',
      keyed,
    });
    vertexOf.set(node.id, vertices.length - 1);
  }

  const edges: JobEdge[] = [];
  graph.edges.forEach((edge, index) => {
    const source = vertexOf.get(edge.source) as number;
    const target = vertexOf.get(edge.target) as number;
    if (source === target) return; // chained
    edges.push({
      id: edges.length,
      source,
      target,
      partitioning: partitioningOf[index] as Partitioning,
      streamEdge: index,
      inputIndex: edge.inputIndex ?? 0,
      outputTag: edge.outputTag,
    });
  });
  return { jobName, vertices, edges, nodes, maxParallelism: config.maxParallelism };
}

/**
 * An operator that works in event time (event-time windows, interval joins) needs watermarks:
 * every source upstream of it must have a watermark strategy, or its windows would never fire.
 */
function checkWatermarks(graph: StreamGraph): void {
  for (const node of graph.nodes) {
    if (node.kind !== 'operator' || node.needsWatermarks === undefined) continue;
    const seen = new Set<number>();
    const pending = [node.id];
    while (pending.length > 0) {
      const id = pending.pop() as number;
      if (seen.has(id)) continue;
      seen.add(id);
      const upstream = graph.node(id);
      if (upstream.kind === 'source') {
        if (upstream.watermarkStrategy?.hasWatermarks) continue;
        throw new WeirError(
          'NO_WATERMARKS',
          `operator "${node.name}" is ${node.needsWatermarks}, but source "${upstream.name}" upstream of it has no watermark strategy: its windows and timers would never fire`,
          {
            hint: `give the source one: env.fromSource(source, { watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<T>('5s').withTimestampAssigner((record) => record.ts) }), or use processing time (e.g. TumblingProcessingTimeWindows)`,
          },
        );
      }
      for (const edge of graph.inputsOf(id)) pending.push(edge.source);
    }
  }
}
