/**
 * The thread that writes the disk backend's write buffers into lmdb (lmdb-flush-thread.ts starts
 * it: one per thread that hosts disk backends). Each store opens its lmdb environment here too
 * (lmdb-js shares one environment per file within a process) and sends its buffers through a port
 * of its own, encoded (lmdb-write-behind.ts; the layout in lmdb-flush-protocol.ts); each is written
 * in one write transaction, in the order sent, and its sequence number then stored in the store's
 * shared flag (index 0; index 1 the number of one that failed, whose error was posted just before),
 * and posted.
 * The task thread meanwhile goes on with records: lmdb's page reads and writes (a large file read
 * from disk, writes throttled while the kernel writes a copy back) are this thread's wait.
 */
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { type FlushOpenMessage, type FlushPortMessage, type FlushReply, LAYER_REMOVE } from './lmdb-flush-protocol.ts';
import { describeThreadFailure, type ThreadFailure } from './thread-failure.ts';

interface Database {
  putSync(key: Uint8Array, value: Uint8Array): void;
  removeSync(key: Uint8Array): boolean;
  transactionSync<T>(action: () => T): T;
  openDB(name: string, options: object): Database;
  close(): Promise<void>;
}

const lmdb = createRequire(import.meta.url)('lmdb') as { open(options: object): Database };

function open(message: FlushOpenMessage): void {
  const { port, flag } = message;
  let root: Database | undefined;
  let databases: Database[] = [];
  let failure: ThreadFailure | undefined;
  try {
    root = lmdb.open(message.options);
    databases = message.databases.map((name) => (root as Database).openDB(name, { keyEncoding: 'binary', encoding: 'binary', cache: false }));
  } catch (error) {
    failure = describeThreadFailure(error);
  }
  port.on('message', (request: FlushPortMessage) => {
    if (request.type === 'close') {
      const closed = () => {
        port.postMessage({ type: 'closed' } satisfies FlushReply);
        port.close();
      };
      void (root?.close() ?? Promise.resolve()).then(closed, closed);
      return;
    }
    let error = failure;
    if (error === undefined) {
      try {
        (root as Database).transactionSync(() => apply(request.bytes, databases));
      } catch (thrown) {
        error = describeThreadFailure(thrown);
        failure = error;
      }
    }
    // A failure's message before the flag (a store that sees the flag finds it), the flag before the
    // message that wakes the store (it reads the flag then).
    if (error !== undefined) {
      port.postMessage({ type: 'failed', seq: request.seq, error } satisfies FlushReply);
      if (Atomics.load(flag, 1) === 0) Atomics.store(flag, 1, request.seq);
    }
    Atomics.store(flag, 0, request.seq);
    Atomics.notify(flag, 0);
    // The layer's buffer goes back to the store (moved) for its next layer.
    const buffer = request.bytes.buffer as ArrayBuffer;
    port.postMessage({ type: 'written', seq: request.seq, buffer } satisfies FlushReply, [buffer]);
  });
}

/** Writes a layer's entries: table (u8), operation (u8), key length (u16), key, value length (u32), value. */
function apply(bytes: Uint8Array, databases: Database[]): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < bytes.length) {
    const database = databases[view.getUint8(at)] as Database;
    const operation = view.getUint8(at + 1);
    const keyLength = view.getUint16(at + 2);
    const key = bytes.subarray(at + 4, at + 4 + keyLength);
    at += 4 + keyLength;
    const valueLength = view.getUint32(at);
    at += 4;
    if (operation === LAYER_REMOVE) database.removeSync(key);
    else database.putSync(key, bytes.subarray(at, at + valueLength));
    at += valueLength;
  }
}

parentPort?.on('message', (message: FlushOpenMessage) => {
  if (message.type === 'open') open(message);
});
