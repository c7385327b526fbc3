import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobClient } from '../runtime/jobmaster/job-master.ts';
import { DASHBOARD_HTML } from './dashboard-page.ts';

export interface RestServer {
  url: string;
  close(): Promise<void>;
}

/**
 * A running job's web dashboard, its REST API (what the dashboard and the CLI use) and its
 * Prometheus metrics, on 127.0.0.1 by default:
 *
 *   GET  /                 the dashboard (polls the two GETs below)
 *   GET  /api/job          name, state, restarts and their causes, the job graph with parallelism,
 *                          per vertex: records in/out, rates, busy and back-pressured shares,
 *                          operator metrics (the sinks' transactions among them, records skipped
 *                          and dead letters), the latest failure with its stack
 *   GET  /api/checkpoints  checkpoint history: id, kind, status, duration, size, alignment time
 *   POST /api/savepoints   trigger a savepoint; answers when its transactions are committed
 *   POST /api/stop         stop with a savepoint (?drain=true: the end of event time first)
 *   GET  /metrics          Prometheus text format
 */
export async function startRestServer(client: JobClient, options: { port: number; host?: string }): Promise<RestServer> {
  const registry = new Registry();
  const labels = { job: client.graph.jobName };
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
  const counted = new Set<string>();
  const refreshMetrics = () => {
    const status = client.status();
    for (const checkpoint of status.checkpoints) {
      const key = `${checkpoint.checkpointId}:${checkpoint.status}`;
      if (checkpoint.status === 'pending' || counted.has(key)) continue;
      counted.add(key);
      if (checkpoint.status === 'completed') {
        completed.inc(labels);
        duration.set(labels, (checkpoint.durationMs ?? 0) / 1000);
        size.set(labels, checkpoint.bytes);
      } else aborted.inc(labels);
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

  const routes: Record<string, (request: IncomingMessage) => Promise<[number, unknown]>> = {
    'GET /api/job': async () => {
      const status = client.status();
      return [
        200,
        {
          name: status.name,
          state: status.state,
          restarts: status.restarts,
          latestCheckpointId: status.latestCheckpointId,
          vertices: status.vertices,
          failure: status.failure,
          edges: client.graph.edges.map((edge) => ({ source: edge.source, target: edge.target, partitioning: edge.partitioning })),
        },
      ];
    },
    'GET /api/checkpoints': async () => [200, client.status().checkpoints],
    'POST /api/savepoints': async () => {
      const savepoint = await client.triggerSavepoint();
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
    'POST /api/stop': async (request) => {
      const drain = new URL(request.url ?? '/', 'http://localhost').searchParams.get('drain') === 'true';
      const savepoint = await client.stopWithSavepoint({ drain });
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
  };

  const server: Server = createServer((request, response) => {
    void handle(request, response);
  });
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    try {
      if (request.method === 'GET' && (path === '/' || path === '/index.html')) {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        response.end(DASHBOARD_HTML);
        return;
      }
      if (request.method === 'GET' && path === '/metrics') {
        refreshMetrics();
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(await registry.metrics());
        return;
      }
      const route = routes[`${request.method} ${path}`];
      if (route === undefined) {
        send(response, 404, {
          error: `no ${request.method} ${path}`,
          hint: 'GET / (the dashboard), GET /api/job, GET /api/checkpoints, POST /api/savepoints, POST /api/stop, GET /metrics',
        });
        return;
      }
      const [status, body] = await route(request);
      send(response, status, body);
    } catch (error) {
      send(response, error instanceof WeirError && error.fault === 'user' ? 400 : 500, {
        error: error instanceof Error ? error.message : String(error),
        hint: error instanceof WeirError ? error.hint : undefined,
      });
    }
  };

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new WeirError('PORT_TAKEN', `the REST API port ${options.port} on ${host} is taken`, { hint: 'pass --ui-port <another port>, or --no-ui' })
          : error,
      ),
    );
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    url: `http://${host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)));
}
