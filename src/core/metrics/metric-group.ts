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
