import { Counter, Gauge, Registry } from 'prom-client';
import type { JobStatus } from '../runtime/jobmaster/job-master.ts';

/** A job's Prometheus metrics: `refresh` sets them from its status right before a scrape. */
export interface PrometheusMetrics {
  readonly contentType: string;
  refresh(status: JobStatus): void;
  text(): Promise<string>;
}

/** The metrics GET /metrics serves (their names and help are in docs/operations.md). */
export function createPrometheusMetrics(jobName: string): PrometheusMetrics {
  const registry = new Registry();
  const labels = { job: jobName };
  const completed = new Counter({ name: 'weir_checkpoints_completed_total', help: 'Checkpoints completed', labelNames: ['job'], registers: [registry] });
  const aborted = new Counter({
    name: 'weir_checkpoints_aborted_total',
    help: 'Checkpoints aborted (timeout, decline, subsumed)',
    labelNames: ['job'],
    registers: [registry],
  });
  const duration = new Gauge({
    name: 'weir_last_checkpoint_duration_seconds',
    help: 'Duration of the latest completed checkpoint',
    labelNames: ['job'],
    registers: [registry],
  });
  const size = new Gauge({
    name: 'weir_last_checkpoint_size_bytes',
    help: 'State size of the latest completed checkpoint',
    labelNames: ['job'],
    registers: [registry],
  });
  const restarts = new Gauge({ name: 'weir_job_restarts', help: 'Restarts of the job since it was started', labelNames: ['job'], registers: [registry] });
  const taskLabels = ['job', 'vertex', 'subtask'];
  const recordsIn = new Gauge({
    name: 'weir_task_records_in',
    help: 'Records a subtask took in (this attempt)',
    labelNames: taskLabels,
    registers: [registry],
  });
  const recordsOut = new Gauge({
    name: 'weir_task_records_out',
    help: 'Records a subtask sent on (this attempt)',
    labelNames: taskLabels,
    registers: [registry],
  });
  const backPressured = new Gauge({
    name: 'weir_task_back_pressured_ratio',
    help: 'Share of the last second a subtask waited for output credit',
    labelNames: taskLabels,
    registers: [registry],
  });
  const watermarkGauge = new Gauge({
    name: 'weir_task_watermark_milliseconds',
    help: "A subtask's event-time watermark (absent before its first)",
    labelNames: taskLabels,
    registers: [registry],
  });
  const busy = new Gauge({ name: 'weir_task_busy_ratio', help: 'Share of the last second a subtask was busy', labelNames: taskLabels, registers: [registry] });
  const transactions = new Gauge({
    name: 'weir_sink_transactions',
    help: "A two-phase-commit sink's transactions: open and pending (now), preCommitted, committed and aborted (this attempt)",
    labelNames: ['job', 'sink', 'state'],
    registers: [registry],
  });
  const operatorMetrics = new Gauge({
    name: 'weir_operator_metric',
    help: "An operator's own metric, summed over its subtasks (this attempt)",
    labelNames: ['job', 'vertex', 'metric'],
    registers: [registry],
  });
  // Records an error policy let through without output (skip, dead letter) and records an out-of-range offset skipped, by operator uid.
  const badRecords = {
    recordsSkipped: new Gauge({
      name: 'weir_records_skipped',
      help: 'Records an operator or source skipped under its error policy (onError / onDeserializationError: skip), this attempt',
      labelNames: ['job', 'vertex', 'operator'],
      registers: [registry],
    }),
    deadLetters: new Gauge({
      name: 'weir_dead_letters',
      help: 'Records an operator or source sent to its dead-letter topic under its error policy, this attempt',
      labelNames: ['job', 'vertex', 'operator'],
      registers: [registry],
    }),
    recordsLostOutOfRange: new Gauge({
      name: 'weir_source_records_lost',
      help: "Records a Kafka source skipped because its offset was out of range (onOffsetOutOfRange 'earliest' or 'latest'), this attempt",
      labelNames: ['job', 'vertex', 'operator'],
      registers: [registry],
    }),
  };
  // The counters follow the job's life-time counts (never the capped history).
  let countedCompleted = 0;
  let countedFailed = 0;
  const refresh = (status: JobStatus) => {
    const counts = status.checkpointCounts;
    if (counts.completed > countedCompleted) completed.inc(labels, counts.completed - countedCompleted);
    if (counts.failed > countedFailed) aborted.inc(labels, counts.failed - countedFailed);
    countedCompleted = counts.completed;
    countedFailed = counts.failed;
    const latest = status.checkpoints.findLast((checkpoint) => checkpoint.status === 'completed');
    if (latest !== undefined) {
      duration.set(labels, (latest.durationMs ?? 0) / 1000);
      size.set(labels, latest.bytes);
    }
    restarts.set(labels, status.restarts.length);
    for (const gauge of [recordsIn, recordsOut, backPressured, busy, watermarkGauge, transactions, operatorMetrics, ...Object.values(badRecords)])
      gauge.reset();
    for (const vertex of status.vertices) {
      for (const subtask of vertex.subtasks) {
        const task = { ...labels, vertex: vertex.name, subtask: String(subtask.subtaskIndex) };
        recordsIn.set(task, subtask.recordsIn);
        recordsOut.set(task, subtask.recordsOut);
        backPressured.set(task, subtask.backPressured);
        busy.set(task, subtask.busy);
        if (subtask.watermark !== null) watermarkGauge.set(task, subtask.watermark);
      }
      for (const [metric, value] of Object.entries(vertex.operators)) {
        const transaction = /^(.+)\.transactions\.(\w+)$/.exec(metric);
        if (transaction !== null) transactions.set({ ...labels, sink: transaction[1] as string, state: transaction[2] as string }, value);
        else operatorMetrics.set({ ...labels, vertex: vertex.name, metric }, value);
        const bad = /^(.+)\.(recordsSkipped|deadLetters|recordsLostOutOfRange)$/.exec(metric);
        if (bad !== null) badRecords[bad[2] as keyof typeof badRecords].set({ ...labels, vertex: vertex.name, operator: bad[1] as string }, value);
      }
    }
  };
  return { contentType: registry.contentType, refresh, text: () => registry.metrics() };
}
