import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobClient } from '../runtime/jobmaster/job-master.ts';
import { DASHBOARD_HTML } from './dashboard-page.ts';
import { JobHistory } from './job-history.ts';
import { createPrometheusMetrics, type PrometheusMetrics } from './prometheus-metrics.ts';
import { guardRequest } from './request-guard.ts';

export interface RestServerOptions {
  port: number;
  /** The address to listen on; default 127.0.0.1. */
  host?: string;
  /** When set, /api and /metrics need `Authorization: Bearer <token>`. */
  token?: string;
}

export interface RestServer {
  url: string;
  /**
   * The job to serve: until then /api answers 503 and /health/ready says it is loading. `cluster`:
   * a cluster member's view of its cluster, at GET /api/cluster. `notReady`: why a running job is
   * not ready now (a cluster member out of its group), else undefined.
   */
  attach(client: JobClient, options?: { cluster?: () => Promise<unknown>; notReady?: () => string | undefined }): void;
  close(): Promise<void>;
}

const ROUTES_HINT =
  'GET / (the dashboard), GET /api/job, GET /api/checkpoints, GET /api/history, GET /api/cluster (cluster mode), POST /api/savepoints, POST /api/stop, GET /metrics, GET /health, GET /health/ready';

/**
 * A running job's web dashboard, its REST API (what the dashboard and the CLI use), its Prometheus
 * metrics and its health probes, on 127.0.0.1 by default. It listens before the job loads (so a
 * taken port stops `weir run` before anything runs) and serves the job once attached.
 *
 *   GET  /                 the dashboard (polls the two GETs below)
 *   GET  /api/history      the last minutes, a sample a second (throughput, back pressure, lag) and the checkpoints completed in them
 *   GET  /api/cluster      cluster mode: the members, the tasks each owns, each task's last checkpoint and lag (read from Kafka)
 *   GET  /api/job          name, state, restarts and their causes, checkpoint counts over the job's
 *                          life, the job graph with parallelism, per vertex: records in/out, rates,
 *                          busy and back-pressured shares, operator metrics (the sinks' transactions
 *                          among them, records skipped and dead letters), the latest failure with its stack
 *   GET  /api/checkpoints  checkpoint history (the latest 100): id, kind, status, duration, sync and async parts, size, alignment
 *   POST /api/savepoints   trigger a savepoint; answers when its transactions are committed
 *   POST /api/stop         stop with a savepoint (?drain=true: the end of event time first)
 *   GET  /metrics          Prometheus text format
 *   GET  /health           liveness: 200 while the process serves
 *   GET  /health/ready     readiness: 200 while the job's tasks run, 503 otherwise (loading,
 *                          starting, restarting, ended; a cluster member out of its group)
 *
 * Requests are checked first ({@link guardRequest}): cross-site POSTs are refused, and with a
 * token /api and /metrics need it.
 */
export async function startRestServer(options: RestServerOptions): Promise<RestServer> {
  const host = options.host ?? '127.0.0.1';
  let client: JobClient | undefined;
  let metrics: PrometheusMetrics | undefined;
  let history: JobHistory | undefined;
  let sampler: NodeJS.Timeout | undefined;
  let cluster: (() => Promise<unknown>) | undefined;
  let notReady: (() => string | undefined) | undefined;

  const routes: Record<string, (client: JobClient, request: IncomingMessage) => Promise<[number, unknown]>> = {
    'GET /api/job': async (job) => {
      const status = job.status();
      return [
        200,
        {
          name: status.name,
          state: status.state,
          restarts: status.restarts,
          latestCheckpointId: status.latestCheckpointId,
          checkpointCounts: status.checkpointCounts,
          vertices: status.vertices.map((vertex) => ({ ...vertex, sink: job.graph.vertices[vertex.id]?.isSink === true })),
          lag: sourceLag(status.vertices),
          failure: status.failure,
          edges: job.graph.edges.map((edge) => ({ source: edge.source, target: edge.target, partitioning: edge.partitioning })),
        },
      ];
    },
    'GET /api/checkpoints': async (job) => [200, job.status().checkpoints],
    'GET /api/history': async (job) => [200, (history as JobHistory).view(job.status())],
    'GET /api/cluster': async () =>
      cluster === undefined
        ? [404, { error: 'this job runs in one process, not in cluster mode', hint: 'weir run --cluster <id> runs it in cluster mode' }]
        : [200, await cluster()],
    'POST /api/savepoints': async (job) => {
      const savepoint = await job.triggerSavepoint();
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
    'POST /api/stop': async (job, request) => {
      const drain = new URL(request.url ?? '/', 'http://localhost').searchParams.get('drain') === 'true';
      const savepoint = await job.stopWithSavepoint({ drain });
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0] as string;
    try {
      const refusal = guardRequest(request, path, { host, token: options.token });
      if (refusal !== undefined) {
        send(response, refusal.status, refusal.body, refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
        return;
      }
      if (request.method === 'GET' && (path === '/' || path === '/index.html')) {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        response.end(DASHBOARD_HTML);
        return;
      }
      const asset = request.method === 'GET' ? ASSETS[path] : undefined;
      if (asset !== undefined) {
        response.writeHead(200, { 'content-type': asset.type, 'cache-control': 'max-age=3600' });
        response.end(asset.body());
        return;
      }
      if (request.method === 'GET' && path === '/health') {
        send(response, 200, { status: 'UP' });
        return;
      }
      if (request.method === 'GET' && path === '/health/ready') {
        const state = client?.status().state ?? 'loading';
        const reason = state === 'running' ? notReady?.() : undefined;
        const ready = state === 'running' && reason === undefined;
        send(response, ready ? 200 : 503, { status: ready ? 'UP' : 'DOWN', state, ...(reason === undefined ? {} : { reason }) });
        return;
      }
      if (request.method === 'GET' && path === '/metrics') {
        if (client !== undefined && metrics !== undefined) metrics.refresh(client.status());
        response.writeHead(200, { 'content-type': metrics?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8' });
        response.end(metrics === undefined ? '' : await metrics.text());
        return;
      }
      const route = routes[`${request.method} ${path}`];
      if (route === undefined) {
        send(response, 404, { error: `no ${request.method} ${path}`, hint: ROUTES_HINT });
        return;
      }
      if (client === undefined) {
        send(response, 503, { error: 'the job is still loading (its module, plan and preflight)', hint: 'try again once GET /health/ready answers 200' });
        return;
      }
      const [status, body] = await route(client, request);
      send(response, status, body);
    } catch (error) {
      send(response, error instanceof WeirError && error.fault === 'user' ? 400 : 500, {
        error: error instanceof Error ? error.message : String(error),
        hint: error instanceof WeirError ? error.hint : undefined,
      });
    }
  };
  const server: Server = createServer((request, response) => {
    void handle(request, response);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, options.port)));
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    attach: (job, attachOptions) => {
      client = job;
      cluster = attachOptions?.cluster;
      notReady = attachOptions?.notReady;
      metrics = createPrometheusMetrics(job.graph.jobName);
      // A sample a second of the job's last minutes, for the dashboard's charts.
      history = new JobHistory();
      clearInterval(sampler);
      sampler = setInterval(() => (history as JobHistory).record(job.status(), job.graph), 1000);
      sampler.unref();
    },
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(sampler);
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/**
 * What the dashboard page loads besides itself, served from the package (a dashboard must work
 * offline, so no CDN): uPlot, a small charting library, for its charts.
 */
const requireAsset = createRequire(import.meta.url);
const asset = (file: string, type: string) => {
  let body: Buffer | undefined;
  return { type, body: () => (body ??= readFileSync(requireAsset.resolve(file))) };
};
const ASSETS: Record<string, { type: string; body: () => Buffer }> = {
  '/assets/uplot.js': asset('uplot/dist/uPlot.iife.min.js', 'text/javascript; charset=utf-8'),
  '/assets/uplot.css': asset('uplot/dist/uPlot.min.css', 'text/css; charset=utf-8'),
};

function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === 'EADDRINUSE') {
    return new WeirError('PORT_TAKEN', `the dashboard and REST API port ${port} on ${host} is taken (by another job or program)`, {
      hint: 'pass --ui-port <another port> (0 picks a free one), or --no-ui',
    });
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND' || error.code === 'EACCES') {
    return new WeirError('UI_ADDRESS_UNAVAILABLE', `cannot listen on ${host}:${port} for the dashboard and REST API (${error.code})`, {
      hint: 'pass --ui-host an address of this machine (127.0.0.1 by default, 0.0.0.0 for every interface) and a --ui-port above 1023',
    });
  }
  return error;
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)));
}

/**
 * The job's consumer lag in one place, so a script can tell when it has caught up: records not read
 * yet over every source partition, and the largest lag in seconds (the per-partition gauges are in
 * `vertices[].operators` as `<uid>.lag/<topic>/<partition>/records|seconds`).
 */
function sourceLag(vertices: readonly { operators: Record<string, number> }[]): { records: number; seconds: number; partitions: number } {
  let records = 0;
  let seconds = 0;
  let partitions = 0;
  for (const vertex of vertices) {
    for (const [metric, value] of Object.entries(vertex.operators)) {
      if (/\.lag\/.+\/\d+\/records$/.test(metric)) {
        records += value;
        partitions++;
      } else if (/\.lag\/.+\/\d+\/seconds$/.test(metric)) seconds = Math.max(seconds, value);
    }
  }
  return { records, seconds, partitions };
}
