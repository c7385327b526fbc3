import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
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
  const parts = new Gauge({
    name: 'weir_last_checkpoint_part_seconds',
    help: "The latest completed checkpoint's longest synchronous part of a task (part=sync: the task stood still) and asynchronous part (part=async: state written while records flowed)",
    labelNames: ['job', 'part'],
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
  // Consumer lag per source partition, and how old the sinks' open transactions are against their timeout.
  const lagRecords = new Gauge({
    name: 'weir_source_lag_records',
    help: 'Records of a source partition not read yet (up to the end its isolation sees)',
    labelNames: ['job', 'operator', 'topic', 'partition'],
    registers: [registry],
  });
  const lagSeconds = new Gauge({
    name: 'weir_source_lag_seconds',
    help: 'How far behind a source partition is in time: seconds since the timestamp of the last record read, while records wait (0 when caught up)',
    labelNames: ['job', 'operator', 'topic', 'partition'],
    registers: [registry],
  });
  const transactionAge = new Gauge({
    name: 'weir_sink_transaction_oldest_age_seconds',
    help: "Age of an exactly-once sink subtask's oldest open transaction (written or pre-committed, not yet committed); the broker aborts it at weir_sink_transaction_timeout_seconds",
    labelNames: ['job', 'sink', 'subtask'],
    registers: [registry],
  });
  const transactionTimeout = new Gauge({
    name: 'weir_sink_transaction_timeout_seconds',
    help: 'The transaction timeout of an exactly-once sink subtask: an open transaction older than this is aborted by the broker, and its records are lost',
    labelNames: ['job', 'sink', 'subtask'],
    registers: [registry],
  });
  // What the job's own functions count and measure (RuntimeContext.metrics).
  const userMetrics = new Gauge({
    name: 'weir_user_metric',
    help: "A user function's metric (counters and meter counts and rates summed over subtasks; histogram percentiles per subtask, as <name>/<subtask>/p99)",
    labelNames: ['job', 'vertex', 'operator', 'metric'],
    registers: [registry],
  });
  // Records in and out over the job's life in this process, across restarts of its attempts.
  const recordsInTotal = new Counter({
    name: 'weir_vertex_records_in_total',
    help: 'Records into a job vertex, over every attempt',
    labelNames: ['job', 'vertex'],
    registers: [registry],
  });
  const recordsOutTotal = new Counter({
    name: 'weir_vertex_records_out_total',
    help: 'Records out of a job vertex, over every attempt',
    labelNames: ['job', 'vertex'],
    registers: [registry],
  });
  const exportedTotals = new Map<string, { in: number; out: number }>();
  // The process: CPU, heap, event loop lag, GC (prom-client's default collectors; worker threads share the process's memory).
  collectDefaultMetrics({ register: registry });
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
      if (latest.syncMs !== undefined) parts.set({ ...labels, part: 'sync' }, latest.syncMs / 1000);
      if (latest.asyncMs !== undefined) parts.set({ ...labels, part: 'async' }, latest.asyncMs / 1000);
    }
    restarts.set(labels, status.restarts.length);
    for (const gauge of [
      recordsIn,
      recordsOut,
      backPressured,
      busy,
      watermarkGauge,
      transactions,
      operatorMetrics,
      lagRecords,
      lagSeconds,
      userMetrics,
      transactionAge,
      transactionTimeout,
      ...Object.values(badRecords),
    ])
      gauge.reset();
    for (const vertex of status.vertices) {
      const exported = exportedTotals.get(vertex.name) ?? { in: 0, out: 0 };
      if (vertex.totalRecordsIn > exported.in) recordsInTotal.inc({ ...labels, vertex: vertex.name }, vertex.totalRecordsIn - exported.in);
      if (vertex.totalRecordsOut > exported.out) recordsOutTotal.inc({ ...labels, vertex: vertex.name }, vertex.totalRecordsOut - exported.out);
      exportedTotals.set(vertex.name, { in: Math.max(exported.in, vertex.totalRecordsIn), out: Math.max(exported.out, vertex.totalRecordsOut) });
      for (const subtask of vertex.subtasks) {
        const task = { ...labels, vertex: vertex.name, subtask: String(subtask.subtaskIndex) };
        recordsIn.set(task, subtask.recordsIn);
        recordsOut.set(task, subtask.recordsOut);
        backPressured.set(task, subtask.backPressured);
        busy.set(task, subtask.busy);
        if (subtask.watermark !== null) watermarkGauge.set(task, subtask.watermark);
      }
      for (const [metric, value] of Object.entries(vertex.operators)) {
        const user = /^(.+?)\.user\.(.+)$/.exec(metric);
        if (user !== null) {
          userMetrics.set({ ...labels, vertex: vertex.name, operator: user[1] as string, metric: user[2] as string }, value);
          continue;
        }
        const lag = /^(.+)\.lag\/(.+)\/(\d+)\/(records|seconds)$/.exec(metric);
        if (lag !== null) {
          (lag[4] === 'records' ? lagRecords : lagSeconds).set(
            { ...labels, operator: lag[1] as string, topic: lag[2] as string, partition: lag[3] as string },
            value,
          );
          continue;
        }
        const age = /^(.+)\.transactionAge\/(\d+)\/(oldestMs|timeoutMs)$/.exec(metric);
        if (age !== null) {
          (age[3] === 'oldestMs' ? transactionAge : transactionTimeout).set({ ...labels, sink: age[1] as string, subtask: age[2] as string }, value / 1000);
          continue;
        }
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
