import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { FlushOpenMessage, FlushPortMessage, FlushReply } from './lmdb-flush-protocol.ts';
import { type ThreadFailure, threadFailureError } from './thread-failure.ts';

const ENTRY = new URL(`./lmdb-flush-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** The flush thread of this thread's stores: started on first use, never keeping the process alive. */
let shared: Worker | undefined;

function flushWorker(): Worker {
  if (shared !== undefined) return shared;
  // No heap limits of its own: a layer's bytes (external memory, up to 8 buffers of large values) must
  // never make it run out of memory and end while a store waits for it (a waiting thread cannot see it end).
  const worker = new Worker(ENTRY, { execArgv: [] });
  worker.unref();
  // A thread that ended (it never should: it answers every failure on the store's port) is started again for the next store.
  worker.once('exit', () => {
    if (shared === worker) shared = undefined;
  });
  shared = worker;
  return worker;
}

/**
 * A store's end of the flush thread (lmdb-flush-worker.ts): sends it layers (encoded write
 * buffers) to write into lmdb in order, tells which it has written without waiting
 * ({@link written}), or waits for one ({@link waitFor}: the task thread blocks, as it did when it
 * wrote them itself). A failure is thrown by {@link written} and {@link waitFor} from then on.
 */
export class LmdbFlushThread {
  readonly #port: MessagePort;
  /** [last sequence written, sequence of a write that failed]. */
  readonly #flag = new Int32Array(new SharedArrayBuffer(8));
  #failure: ThreadFailure | undefined;
  #closed: Promise<void> | undefined;
  #closedResolve: (() => void) | undefined;
  /**
   * Called (on the event loop) when a layer was written, with the layer's buffer the thread gave
   * back: the store drops the layer, takes what waited for it and may reuse the buffer (must not throw).
   */
  onWritten: (buffer: ArrayBuffer | undefined) => void = () => {};

  readonly #toError: (failure: Error) => Error;

  /**
   * Opens lmdb's environment with `options` (the store's) in the flush thread, its `databases` in
   * the order layers number them; `toError` makes the error a failed write throws (the store names its folder).
   */
  constructor(options: object, databases: readonly string[], toError: (failure: Error) => Error) {
    this.#toError = toError;
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    port1.on('message', (reply: FlushReply) => this.#handle(reply));
    port1.unref();
    const open: FlushOpenMessage = { type: 'open', options, databases: [...databases], port: port2, flag: this.#flag };
    flushWorker().postMessage(open, [port2]);
  }

  /** The last layer written (all before it were); throws when one failed. */
  written(): number {
    if (Atomics.load(this.#flag, 1) !== 0) this.#throwFailure();
    return Atomics.load(this.#flag, 0);
  }

  /** Sends layer `seq` (its bytes are moved, not copied); the port keeps the process alive until it is written. */
  send(seq: number, bytes: Uint8Array): void {
    this.#port.ref();
    const message: FlushPortMessage = { type: 'layer', seq, bytes };
    this.#port.postMessage(message, [bytes.buffer as ArrayBuffer]);
  }

  /** Blocks until layer `seq` is written; throws when a layer failed. */
  waitFor(seq: number): void {
    for (let written = this.written(); written < seq; written = this.written()) Atomics.wait(this.#flag, 0, written, 1000);
  }

  /**
   * Handles the answers waiting on the port now, as the event loop would: in a long synchronous
   * stretch (a restore applies its changes in one) they would wait for it, and each written layer's
   * buffer with them (at 10M keys a restore allocated 485 MB of layers so).
   */
  deliverReplies(): void {
    for (let message = receiveMessageOnPort(this.#port); message !== undefined; message = receiveMessageOnPort(this.#port))
      this.#handle(message.message as FlushReply);
  }

  /** Nothing is waited for: the port no longer keeps the process alive. */
  idle(): void {
    this.#port.unref();
  }

  /** Closes the environment in the flush thread (after every layer sent); settles once it is closed. */
  close(): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    this.#closed = new Promise<void>((resolve) => {
      this.#closedResolve = resolve;
    });
    this.#port.ref();
    this.#port.postMessage({ type: 'close' } satisfies FlushPortMessage);
    return this.#closed;
  }

  #handle(reply: FlushReply): void {
    this.#reply(reply);
    if (reply.type === 'written') this.onWritten(reply.buffer);
  }

  #reply(reply: FlushReply): void {
    if (reply.type === 'closed') {
      this.#port.close();
      this.#closedResolve?.();
      return;
    }
    if (reply.type === 'failed') this.#failure ??= reply.error;
  }

  #throwFailure(): never {
    // The failure's message may still be queued: take it now (the task thread is blocked in a synchronous call).
    for (let message = receiveMessageOnPort(this.#port); message !== undefined; message = receiveMessageOnPort(this.#port))
      this.#reply(message.message as FlushReply);
    const failure = this.#failure ?? { message: 'the flush thread failed' };
    throw this.#toError(threadFailureError(failure));
  }
}
