import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { WeirError } from '../errors.ts';
import type { JobClient } from '../runtime/job-master.ts';

export interface RestServer {
  url: string;
  close(): Promise<void>;
}

/**
 * A running job's REST API (what the CLI and, later, the dashboard use) and its Prometheus
 * metrics, on 127.0.0.1 by default:
 *
 *   GET  /api/job          name, state, restarts, the job graph with parallelism
 *   GET  /api/checkpoints  checkpoint history: id, kind, status, duration, size, alignment time
 *   POST /api/savepoints   trigger a savepoint; answers when its transactions are committed
 *   POST /api/stop         stop with a savepoint
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
          vertices: client.graph.vertices.map((vertex) => ({ id: vertex.id, name: vertex.name, parallelism: vertex.parallelism })),
          edges: client.graph.edges.map((edge) => ({ source: edge.source, target: edge.target, partitioning: edge.partitioning })),
        },
      ];
    },
    'GET /api/checkpoints': async () => [200, client.status().checkpoints],
    'POST /api/savepoints': async () => {
      const savepoint = await client.triggerSavepoint();
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
    'POST /api/stop': async () => {
      const savepoint = await client.stopWithSavepoint();
      return [200, { checkpointId: savepoint.checkpointId, path: savepoint.location.path }];
    },
  };

  const server: Server = createServer((request, response) => {
    void handle(request, response);
  });
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    try {
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
          hint: 'GET /api/job, GET /api/checkpoints, POST /api/savepoints, POST /api/stop, GET /metrics',
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
