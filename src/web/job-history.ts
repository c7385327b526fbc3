import type { JobGraph } from '../graph/job-graph.ts';
import type { JobStatus } from '../runtime/jobmaster/job-master.ts';

/** One second of a job, as the dashboard's charts draw it. */
export interface HistorySample {
  at: number;
  /** Records into the job's source vertices per second (what it reads). */
  recordsInPerSecond: number;
  /** Records into its sink vertices per second (what it writes). */
  recordsOutPerSecond: number;
  /** The most back-pressured vertex's share of the second (0..1). */
  backPressured: number;
  /** Consumer lag by source operator uid: records not read yet. */
  lag: Record<string, number>;
}

/** How far back the history goes: ten minutes of one sample a second. */
export const HISTORY_SECONDS = 600;

/**
 * The last minutes of a job (Flink's web UI keeps them in the browser; here the REST server keeps
 * them, so a page opened late shows them too): a sample a second of its throughput, back pressure
 * and lag, and its checkpoints' durations and sizes, for GET /api/history.
 */
export class JobHistory {
  readonly #samples: HistorySample[] = [];

  /** Takes the sample of now from the job's status. */
  record(status: JobStatus, graph: JobGraph, now = Date.now()): void {
    const sinks = new Set(graph.vertices.filter((vertex) => vertex.isSink).map((vertex) => vertex.id));
    const targets = new Set(graph.edges.map((edge) => edge.target));
    const sources = new Set(graph.vertices.filter((vertex) => !targets.has(vertex.id)).map((vertex) => vertex.id));
    let into = 0;
    let out = 0;
    let backPressured = 0;
    const lag: Record<string, number> = {};
    for (const vertex of status.vertices) {
      if (sources.has(vertex.id)) into += vertex.recordsInPerSecond;
      if (sinks.has(vertex.id)) out += vertex.recordsInPerSecond;
      backPressured = Math.max(backPressured, vertex.backPressured);
      for (const [metric, value] of Object.entries(vertex.operators)) {
        const match = /^(.+)\.lag\/.+\/\d+\/records$/.exec(metric);
        if (match !== null) lag[match[1] as string] = (lag[match[1] as string] ?? 0) + value;
      }
    }
    this.#samples.push({ at: now, recordsInPerSecond: into, recordsOutPerSecond: out, backPressured, lag });
    if (this.#samples.length > HISTORY_SECONDS) this.#samples.splice(0, this.#samples.length - HISTORY_SECONDS);
  }

  /** The samples and the completed checkpoints of the same minutes. */
  view(status: JobStatus): { samples: HistorySample[]; checkpoints: { checkpointId: number; at: number; durationMs: number; bytes: number }[] } {
    const since = this.#samples[0]?.at ?? Date.now();
    const checkpoints = status.checkpoints
      .filter((checkpoint) => checkpoint.status === 'completed' && checkpoint.triggeredAt >= since)
      .map((checkpoint) => ({
        checkpointId: checkpoint.checkpointId,
        at: checkpoint.triggeredAt + (checkpoint.durationMs ?? 0),
        durationMs: checkpoint.durationMs ?? 0,
        bytes: checkpoint.bytes,
      }));
    return { samples: [...this.#samples], checkpoints };
  }
}
