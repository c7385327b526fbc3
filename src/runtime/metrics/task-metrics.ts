import type { MetricCounter, OperatorMetricGroup } from '../../core/metrics/metric-group.ts';
/**
 * Metrics of one subtask (Flink's TaskIOMetricGroup and OperatorMetricGroup, reduced to what the
 * dashboard, the REST API and Prometheus show). Counting is a field increment per batch on the hot
 * path; the worker sends a snapshot of every task's metrics to the job master once a second.
 */

/** What a task reports: cumulative since the attempt started. */
export interface TaskMetricsSnapshot {
  vertexId: number;
  subtaskIndex: number;
  /** Records that entered the chain (read by a source, or received from input channels). */
  recordsIn: number;
  /** Records the chain's end emitted to output channels. */
  recordsOut: number;
  /** Milliseconds the task could not take input because an output channel had no credit. */
  backPressuredMs: number;
  /** Milliseconds spent processing (records, timers, checkpoints). */
  busyMs: number;
  /** The task's current event-time watermark (ms); null before the first one (JSON has no -Infinity). */
  watermark: number | null;
  /** Operator metrics, by `<operator uid>.<name>`. */
  operators: Record<string, number>;
}

class SimpleCounter implements MetricCounter {
  value = 0;
  inc(n = 1): void {
    this.value += n;
  }
}

export class TaskMetrics {
  recordsIn = 0;
  recordsOut = 0;
  busyMs = 0;
  watermark = Number.NEGATIVE_INFINITY;
  #backPressuredMs = 0;
  #backPressuredSince: number | undefined;
  readonly #counters = new Map<string, SimpleCounter>();
  readonly #gauges = new Map<string, () => number>();

  /** The metric group of one chained operator: names are prefixed with its uid. */
  group(uid: string): OperatorMetricGroup {
    return {
      counter: (name) => {
        const key = `${uid}.${name}`;
        let counter = this.#counters.get(key);
        if (counter === undefined) {
          counter = new SimpleCounter();
          this.#counters.set(key, counter);
        }
        return counter;
      },
      gauge: (name, read) => {
        this.#gauges.set(`${uid}.${name}`, read);
      },
    };
  }

  backPressured(now: number): void {
    this.#backPressuredSince ??= now;
  }

  relieved(now: number): void {
    if (this.#backPressuredSince === undefined) return;
    this.#backPressuredMs += now - this.#backPressuredSince;
    this.#backPressuredSince = undefined;
  }

  snapshot(vertexId: number, subtaskIndex: number, now: number): TaskMetricsSnapshot {
    const operators: Record<string, number> = {};
    for (const [key, counter] of this.#counters) operators[key] = counter.value;
    for (const [key, read] of this.#gauges) {
      try {
        operators[key] = read();
      } catch {
        // a gauge that cannot be read now is left out of this report
      }
    }
    const pressured = this.#backPressuredSince === undefined ? 0 : now - this.#backPressuredSince;
    return {
      vertexId,
      subtaskIndex,
      recordsIn: this.recordsIn,
      recordsOut: this.recordsOut,
      backPressuredMs: this.#backPressuredMs + pressured,
      busyMs: this.busyMs,
      watermark: Number.isFinite(this.watermark) ? this.watermark : this.watermark > 0 ? Number.MAX_SAFE_INTEGER : null,
      operators,
    };
  }
}
