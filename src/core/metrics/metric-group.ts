/** A monotonically rising count an operator keeps (Flink's Counter). */
export interface MetricCounter {
  inc(n?: number): void;
}

/** What an operator registers its own metrics with (Flink's OperatorMetricGroup). */
export interface OperatorMetricGroup {
  /** A counter named `name`, summed over the operator's subtasks in the REST API and /metrics. */
  counter(name: string): MetricCounter;
  /** A value read when metrics are reported (current size, pending count). Summed over subtasks. */
  gauge(name: string, read: () => number): void;
}

/** The distribution of values a function reports (Flink's Histogram): percentiles over its latest values. */
export interface MetricHistogram {
  update(value: number): void;
}

/** Events and their rate (Flink's Meter): a count, and events per second over the last minute. */
export interface MetricMeter {
  markEvent(n?: number): void;
}

/**
 * The metrics a user function registers from its runtime context (Flink's
 * `getRuntimeContext().getMetricGroup()`), under its operator: in `/api/job` (the vertex's
 * `operators`, as `<uid>.user.<name>...`), in `/metrics` (`weir_user_metric`) and on the dashboard.
 * Register them in `open`; names are letters, digits, `_`, `-` and `.`.
 */
export interface UserMetricGroup {
  /** Summed over the operator's subtasks. */
  counter(name: string): MetricCounter;
  /** A value read at each report (summed over subtasks). */
  gauge(name: string, read: () => number): void;
  /** p50, p95, p99 and max over the latest 1024 values, per subtask; and how many values there were. */
  histogram(name: string): MetricHistogram;
  /** The count (summed) and the rate over the last minute (events per second, summed). */
  meter(name: string): MetricMeter;
}
