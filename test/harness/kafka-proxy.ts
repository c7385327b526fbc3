/**
 * A TCP proxy in front of one Kafka broker, for tests of what a client does when the network
 * loses an answer. It forwards bytes both ways unchanged, and reads the length-prefixed Kafka
 * frames just enough to know each request's api key and correlation id and to match each
 * response to its request. A fault armed on it acts once, on the n-th Produce response (api key 0)
 * that passes after it was armed:
 *
 * - `drop`: the response is swallowed and the connection stays open (the client sees nothing
 *   until its request timeout; the broker did write the batches);
 * - `cut`: the response is swallowed and both sides of its connection are destroyed at once
 *   (every request in flight on it loses its answer).
 *
 * The broker must advertise the proxy's address (its `advertised.listeners`), so that the
 * connections a client opens from the metadata go through the proxy too.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

const PRODUCE = 0;

export type ProxyFault = 'drop' | 'cut';

export interface KafkaProxyStats {
  /** Produce requests forwarded to the broker. */
  produceRequests: number;
  /** Produce responses forwarded to the client. */
  produceResponses: number;
  /** Produce responses swallowed by a fault. */
  produceResponsesLost: number;
  /** Client connections accepted. */
  connections: number;
}

interface Armed {
  fault: ProxyFault;
  /** Produce responses still to let pass before the fault acts. */
  remaining: number;
  fired: () => void;
}

/** Reads a stream of size-prefixed frames and calls `onFrame` with each whole frame (size included). */
class FrameReader {
  #pending: Buffer = Buffer.alloc(0);
  readonly #onFrame: (frame: Buffer) => void;

  constructor(onFrame: (frame: Buffer) => void) {
    this.#onFrame = onFrame;
  }

  push(chunk: Buffer): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (this.#pending.length >= 4) {
      const size = this.#pending.readInt32BE(0);
      if (this.#pending.length < 4 + size) return;
      const frame = this.#pending.subarray(0, 4 + size);
      this.#pending = this.#pending.subarray(4 + size);
      this.#onFrame(frame);
    }
  }
}

export class KafkaProxy {
  readonly port: number;
  readonly stats: KafkaProxyStats = { produceRequests: 0, produceResponses: 0, produceResponsesLost: 0, connections: 0 };
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #armed: Armed | undefined;

  private constructor(server: Server, port: number, target: { host: string; port: number }) {
    this.#server = server;
    this.port = port;
    this.#target = target;
  }

  /** Listens on 127.0.0.1:`port` (0: any free port) and forwards every connection to `target`. */
  static async start(port: number, target: { host: string; port: number }): Promise<KafkaProxy> {
    let proxy: KafkaProxy | undefined;
    const server = createServer((client) => proxy?.accept(client));
    const listening = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host: '127.0.0.1' }, () => {
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
    proxy = new KafkaProxy(server, listening, target);
    return proxy;
  }

  /**
   * Arms a fault on the `nth` Produce response (1 = the next one) to pass from now on; the promise
   * settles when it has acted.
   */
  arm(fault: ProxyFault, nth = 1): Promise<void> {
    return new Promise((resolve) => {
      this.#armed = { fault, remaining: nth - 1, fired: resolve };
    });
  }

  /** Whether an armed fault has not acted yet. */
  get armed(): boolean {
    return this.#armed !== undefined;
  }

  private accept(client: Socket): void {
    this.stats.connections++;
    const broker = connect(this.#target.port, this.#target.host);
    this.#sockets.add(client);
    this.#sockets.add(broker);
    /** The api key of each request in flight on this connection, by correlation id. */
    const apiKeys = new Map<number, number>();
    const close = () => {
      client.destroy();
      broker.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(broker);
    };
    client.on('error', close).on('close', close);
    broker.on('error', close).on('close', close);
    client.pause();
    broker.once('connect', () => client.resume());

    const requests = new FrameReader((frame) => {
      // Request header: size, api key (int16), api version (int16), correlation id (int32).
      const apiKey = frame.readInt16BE(4);
      apiKeys.set(frame.readInt32BE(8), apiKey);
      if (apiKey === PRODUCE) this.stats.produceRequests++;
      broker.write(frame);
    });
    client.on('data', (chunk: Buffer) => requests.push(chunk));

    const responses = new FrameReader((frame) => {
      // Response header: size, correlation id (int32).
      const correlationId = frame.readInt32BE(4);
      const apiKey = apiKeys.get(correlationId);
      apiKeys.delete(correlationId);
      if (apiKey === PRODUCE) {
        const armed = this.#armed;
        if (armed !== undefined && armed.remaining-- === 0) {
          this.#armed = undefined;
          this.stats.produceResponsesLost++;
          if (armed.fault === 'cut') close();
          armed.fired();
          return;
        }
        this.stats.produceResponses++;
      }
      client.write(frame);
    });
    broker.on('data', (chunk: Buffer) => responses.push(chunk));
  }

  /** Stops listening and destroys every connection. */
  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
