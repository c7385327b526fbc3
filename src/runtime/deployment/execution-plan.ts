import type { JobGraph } from '../../graph/job-graph.ts';

/** One subtask of a vertex, placed on a worker thread. */
export interface SubtaskPlacement {
  vertexId: number;
  subtaskIndex: number;
  worker: number;
}

/** One logical channel: records from one subtask of an edge's source to one subtask of its target. */
export interface ChannelPlan {
  id: number;
  edgeId: number;
  sourceVertex: number;
  sourceSubtask: number;
  targetVertex: number;
  targetSubtask: number;
  sourceWorker: number;
  targetWorker: number;
}

/** Where every subtask runs and which channels connect them: plain data, sent to every worker. */
export interface ExecutionPlan {
  workers: number;
  placements: SubtaskPlacement[];
  channels: ChannelPlan[];
}

/**
 * Spreads subtasks over worker threads round-robin (vertex by vertex, so the subtasks of one
 * vertex land on different workers) and lists the channels of every edge: for `forward`, subtask i
 * to subtask i; for the other exchanges, every source subtask to every target subtask.
 */
export function buildExecutionPlan(graph: JobGraph, workerCount: number): ExecutionPlan {
  const total = graph.vertices.reduce((sum, vertex) => sum + vertex.parallelism, 0);
  const workers = Math.max(1, Math.min(workerCount, total));
  const placements: SubtaskPlacement[] = [];
  const workerOf = new Map<string, number>();
  let next = 0;
  for (const vertex of graph.vertices) {
    for (let subtaskIndex = 0; subtaskIndex < vertex.parallelism; subtaskIndex++) {
      const worker = next++ % workers;
      placements.push({ vertexId: vertex.id, subtaskIndex, worker });
      workerOf.set(`${vertex.id}/${subtaskIndex}`, worker);
    }
  }
  const channels: ChannelPlan[] = [];
  for (const edge of graph.edges) {
    const source = graph.vertices[edge.source];
    const target = graph.vertices[edge.target];
    if (source === undefined || target === undefined) throw new Error(`edge ${edge.id} names an unknown vertex`);
    for (let s = 0; s < source.parallelism; s++) {
      for (let t = 0; t < target.parallelism; t++) {
        if (edge.partitioning === 'forward' && s !== t) continue;
        channels.push({
          id: channels.length,
          edgeId: edge.id,
          sourceVertex: source.id,
          sourceSubtask: s,
          targetVertex: target.id,
          targetSubtask: t,
          sourceWorker: workerOf.get(`${source.id}/${s}`) as number,
          targetWorker: workerOf.get(`${target.id}/${t}`) as number,
        });
      }
    }
  }
  return { workers, placements, channels };
}
