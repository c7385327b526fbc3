/**
 * The customer service examples/async-enrichment.ts calls (`http://customers.internal/v1/customers/<id>`),
 * served to a `weir run` child through its HTTP proxy settings (Node's NODE_USE_ENV_PROXY=1 with
 * HTTP_PROXY: fetch tunnels through CONNECT, which this server answers itself), so the example
 * runs as it is. Deterministic: customer `c<n>` has tier `tierOf(n)`; customers in `missing` answer
 * 404 (the order is dropped); customers in `flaky` answer 503 to their first request (the
 * example's retry asks again).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const tierOf = (customer: string): string => ['gold', 'silver', 'bronze'][Number(customer.slice(1)) % 3] as string;

export interface CustomersProxy {
  /** The environment that sends a child's fetch through this server. */
  env: Record<string, string>;
  /** Requests answered, 503s included. */
  requests(): number;
  close(): Promise<void>;
}

export async function startCustomersProxy(missing: ReadonlySet<string>, flaky: ReadonlySet<string>): Promise<CustomersProxy> {
  const failed = new Set<string>();
  let requests = 0;
  const server: Server = createServer((request, response) => {
    requests++;
    const customer = /^\/v1\/customers\/([^/?]+)$/.exec(request.url ?? '')?.[1];
    if (request.headers.host !== 'customers.internal' || customer === undefined) {
      response.writeHead(502).end();
      return;
    }
    if (missing.has(customer)) {
      response.writeHead(404).end();
      return;
    }
    if (flaky.has(customer) && !failed.has(customer)) {
      failed.add(customer);
      response.writeHead(503).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: customer, tier: tierOf(customer) }));
  });
  server.on('connect', (_request, socket, head) => {
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    server.emit('connection', socket);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    env: { NODE_USE_ENV_PROXY: '1', HTTP_PROXY: `http://127.0.0.1:${port}`, NO_PROXY: '127.0.0.1,localhost' },
    requests: () => requests,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}
