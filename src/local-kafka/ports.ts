import { createServer, type Server } from 'node:net';

/** Whether nothing listens on 127.0.0.1:port (by trying to listen there ourselves). */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the kernel says is free right now. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return (await freePorts(1, host))[0] as number;
}

/**
 * `count` ports the kernel says are free right now, all different: each is held until all are
 * taken (ports asked for one at a time can come back the same once the first is let go).
 */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(
        await new Promise<number>((resolve, reject) => {
          server.once('error', reject);
          server.listen({ port: 0, host, exclusive: true }, () => {
            const address = server.address();
            resolve(typeof address === 'object' && address !== null ? address.port : 0);
          });
        }),
      );
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()))));
  }
}
