import type { JobGraph } from '../../graph/job-graph.ts';
import type { TaskMetricsSnapshot } from './task-metrics.ts';

export interface SubtaskMetrics {
  subtaskIndex: number;
  recordsIn: number;
  recordsOut: number;
  recordsInPerSecond: number;
  recordsOutPerSecond: number;
  /** Share of the last report interval the subtask was back-pressured (0..1). */
  backPressured: number;
  /** Share of the last report interval the subtask was busy (0..1). */
  busy: number;
  /** Its event-time watermark (ms), null before the first. */
  watermark: number | null;
}

/** One job vertex (a chain of operators), its subtasks summed as Flink's web UI shows them. */
export interface VertexMetrics {
  id: number;
  name: string;
  parallelism: number;
  recordsIn: number;
  recordsOut: number;
  recordsInPerSecond: number;
  recordsOutPerSecond: number;
  /** Records in and out over the job's life in this process: every attempt's, not only this one's. */
  totalRecordsIn: number;
  totalRecordsOut: number;
  /** The most back-pressured subtask's share (Flink shows the maximum). */
  backPressured: number;
  busy: number;
  /** The lowest watermark of its subtasks that have one (ms; Flink shows the minimum), null when none has. */
  watermark: number | null;
  /** Operator metrics (`<uid>.<name>`), summed over subtasks. */
  operators: Record<string, number>;
  subtasks: SubtaskMetrics[];
}

interface Sample {
  at: number;
  snapshot: TaskMetricsSnapshot;
  rates: { inPerSecond: number; outPerSecond: number; backPressured: number; busy: number };
}

/**
 * The job master's view of every task's metrics: the latest report of each, with rates over the
 * interval since the report before. Counts start at zero with each attempt (as in Flink).
 */
export class JobMetrics {
  readonly #samples = new Map<string, Sample>();
  /** The counts of the attempts before this one, by vertex id. */
  readonly #carried = new Map<number, { recordsIn: number; recordsOut: number }>();

  /** A new attempt: its counts start at zero; the ones so far go into the job's totals. */
  reset(): void {
    for (const [key, sample] of this.#samples) {
      const vertexId = Number(key.slice(0, key.indexOf('/')));
      const carried = this.#carried.get(vertexId) ?? { recordsIn: 0, recordsOut: 0 };
      this.#carried.set(vertexId, { recordsIn: carried.recordsIn + sample.snapshot.recordsIn, recordsOut: carried.recordsOut + sample.snapshot.recordsOut });
    }
    this.#samples.clear();
  }

  update(snapshots: TaskMetricsSnapshot[], now = Date.now()): void {
    for (const snapshot of snapshots) {
      const key = `${snapshot.vertexId}/${snapshot.subtaskIndex}`;
      const previous = this.#samples.get(key);
      const seconds = previous === undefined ? 0 : (now - previous.at) / 1000;
      const rates =
        previous === undefined || seconds <= 0
          ? { inPerSecond: 0, outPerSecond: 0, backPressured: 0, busy: 0 }
          : {
              inPerSecond: (snapshot.recordsIn - previous.snapshot.recordsIn) / seconds,
              outPerSecond: (snapshot.recordsOut - previous.snapshot.recordsOut) / seconds,
              backPressured: clamp((snapshot.backPressuredMs - previous.snapshot.backPressuredMs) / 1000 / seconds),
              busy: clamp((snapshot.busyMs - previous.snapshot.busyMs) / 1000 / seconds),
            };
      this.#samples.set(key, { at: now, snapshot, rates });
    }
  }

  vertices(graph: JobGraph): VertexMetrics[] {
    return graph.vertices.map((vertex) => {
      const subtasks: SubtaskMetrics[] = [];
      const operators: Record<string, number> = {};
      for (let index = 0; index < vertex.parallelism; index++) {
        const sample = this.#samples.get(`${vertex.id}/${index}`);
        if (sample === undefined) continue;
        subtasks.push({
          subtaskIndex: index,
          recordsIn: sample.snapshot.recordsIn,
          recordsOut: sample.snapshot.recordsOut,
          recordsInPerSecond: sample.rates.inPerSecond,
          recordsOutPerSecond: sample.rates.outPerSecond,
          backPressured: sample.rates.backPressured,
          busy: sample.rates.busy,
          watermark: sample.snapshot.watermark,
        });
        for (const [name, value] of Object.entries(sample.snapshot.operators)) operators[name] = (operators[name] ?? 0) + value;
      }
      const sum = (pick: (subtask: SubtaskMetrics) => number) => subtasks.reduce((total, subtask) => total + pick(subtask), 0);
      const max = (pick: (subtask: SubtaskMetrics) => number) => subtasks.reduce((top, subtask) => Math.max(top, pick(subtask)), 0);
      return {
        id: vertex.id,
        name: vertex.name,
        parallelism: vertex.parallelism,
        recordsIn: sum((subtask) => subtask.recordsIn),
        recordsOut: sum((subtask) => subtask.recordsOut),
        totalRecordsIn: (this.#carried.get(vertex.id)?.recordsIn ?? 0) + sum((subtask) => subtask.recordsIn),
        totalRecordsOut: (this.#carried.get(vertex.id)?.recordsOut ?? 0) + sum((subtask) => subtask.recordsOut),
        recordsInPerSecond: sum((subtask) => subtask.recordsInPerSecond),
        recordsOutPerSecond: sum((subtask) => subtask.recordsOutPerSecond),
        backPressured: max((subtask) => subtask.backPressured),
        busy: max((subtask) => subtask.busy),
        watermark: lowestWatermark(subtasks),
        operators,
        subtasks,
      };
    });
  }
}

function lowestWatermark(subtasks: SubtaskMetrics[]): number | null {
  let lowest: number | null = null;
  for (const subtask of subtasks) if (subtask.watermark !== null && (lowest === null || subtask.watermark < lowest)) lowest = subtask.watermark;
  return lowest;
}

function clamp(ratio: number): number {
  return Math.min(1, Math.max(0, ratio));
}
