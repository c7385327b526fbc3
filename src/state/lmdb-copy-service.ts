import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BroadcastChannel, getEnvironmentData, isMainThread, setEnvironmentData, threadId } from 'node:worker_threads';
import { describeThreadFailure, type ThreadFailure, threadFailureError } from './thread-failure.ts';

/**
 * Where a disk backend's base is copied (lmdb's compacting copy, LmdbStore.startCopy): in the
 * process's main thread, never in the worker thread that hosts the backend.
 *
 * lmdb-js runs a copy in libuv's pool of the thread that asked for it and calls back into that
 * thread when it ends. A worker thread ended meanwhile (Worker.terminate: a job cancelled, a
 * failover's restart) runs that callback while its environment is torn down, and lmdb-js's throw
 * into the dying environment aborts the whole process (`FATAL ERROR:
 * Error::ThrowAsJavaScriptException napi_throw`; test/unit/state/lmdb-terminate-during-copy.test.ts).
 * The main thread is never terminated, and lmdb-js shares one environment per file within a process:
 * a worker asks the main thread (a BroadcastChannel) to open the store's environment and copy it.
 * A copy whose worker ended runs to its end there, and the main thread closes its hold on the
 * environment; what it wrote goes with the store's folder (lmdb-working-folder.ts deletes what an
 * earlier attempt left).
 *
 * The main thread offers this ({@link serveLmdbCopies}) before it starts the threads that host
 * tasks (runtime and cluster), which learn it from their environment data, as do threads they
 * start. A thread started without it (a test's own worker) copies itself, as the main thread does.
 */

const CHANNEL = 'weir.lmdb-copy';
/** Environment data (worker_threads) saying the main thread serves copies. */
const SERVED = 'weir.lmdb-copy.served';

interface CopyRequest {
  type: 'copy';
  id: string;
  /** The store's environment options (lmdb.open): its path, databases, flags. */
  options: object;
  folder: string;
}

interface CopyReply {
  type: 'copied';
  id: string;
  error?: ThreadFailure;
}

/** The part of lmdb-js a copy uses. */
interface CopyableEnvironment {
  backup(folder: string, compact: boolean): Promise<void>;
  close(): Promise<void>;
}

type OpenLmdb = (options: object) => CopyableEnvironment;

let service: BroadcastChannel | undefined;

/**
 * In the main thread: serves the copies asked for by worker threads started from now on (once;
 * elsewhere nothing). `open` opens lmdb's environment (lmdb-store.ts passes lmdb-js's, loaded on
 * the first copy).
 */
export function serveLmdbCopies(open: OpenLmdb): void {
  if (!isMainThread || service !== undefined) return;
  const channel = new BroadcastChannel(CHANNEL);
  // A copy in libuv's pool keeps the process alive; the channel alone does not.
  channel.unref();
  channel.onmessage = (event) => {
    const request = (event as MessageEvent).data as CopyRequest | CopyReply;
    if (request.type === 'copy') void copyFor(channel, open, request);
  };
  service = channel;
  setEnvironmentData(SERVED, true);
}

/** Copies running in this (the main) thread: one whose worker ended runs on to its end. */
let running = 0;

/** How many copies the main thread is making now (a process that ends may leave them: see weir run). */
export function lmdbCopiesRunning(): number {
  return running;
}

async function copyFor(channel: BroadcastChannel, open: OpenLmdb, request: CopyRequest): Promise<void> {
  let reply: CopyReply = { type: 'copied', id: request.id };
  let environment: CopyableEnvironment | undefined;
  running++;
  try {
    // A store closed (its folder deleted) before the request came is not made again by opening it.
    const path = (request.options as { path?: string }).path ?? '';
    if (!existsSync(join(path, 'data.mdb'))) throw new Error(`the store at ${path} was closed before its copy began`);
    // Read-only: opening the store's databases takes a read transaction, never the store's write lock.
    environment = open({ ...request.options, readOnly: true });
    await environment.backup(request.folder, true);
  } catch (error) {
    reply = { ...reply, error: describeThreadFailure(error) };
  } finally {
    running--;
  }
  try {
    await environment?.close();
  } catch {
    // The worker's own hold on the environment is what it closes; this one is gone either way.
  }
  channel.postMessage(reply);
}

/** This thread's end of the main thread's copies (made on first use), and the copies it waits for. */
let client: { channel: BroadcastChannel; waiting: Map<string, PromiseWithResolvers<void>> } | undefined;
let nextCopy = 0;

/**
 * Copies the lmdb environment `options` opens (held open by this thread as `environment`) into
 * `<folder>/data.mdb`, compacted: in the main thread when it serves copies and this is a worker
 * thread, else here. Settles when the copy has ended.
 */
export function copyLmdb(environment: CopyableEnvironment, options: object, folder: string): Promise<void> {
  if (isMainThread || getEnvironmentData(SERVED) !== true) return environment.backup(folder, true);
  if (client === undefined) {
    const channel = new BroadcastChannel(CHANNEL);
    const waiting = new Map<string, PromiseWithResolvers<void>>();
    channel.onmessage = (event) => {
      const reply = (event as MessageEvent).data as CopyRequest | CopyReply;
      if (reply.type !== 'copied') return;
      const copy = waiting.get(reply.id);
      if (copy === undefined) return;
      waiting.delete(reply.id);
      if (waiting.size === 0) channel.unref();
      if (reply.error === undefined) copy.resolve();
      else copy.reject(threadFailureError(reply.error));
    };
    client = { channel, waiting };
  }
  const id = `${process.pid}-${threadId}-${nextCopy++}`;
  const copy = Promise.withResolvers<void>();
  client.waiting.set(id, copy);
  // Waiting for a copy keeps the thread alive, as lmdb-js's own copy would.
  client.channel.ref();
  client.channel.postMessage({ type: 'copy', id, options, folder } satisfies CopyRequest);
  return copy.promise;
}
