import { WeirError } from '../core/errors/weir-error.ts';
import { checkCloneable } from './check-cloneable.ts';
import { LmdbBarrier, type LmdbTransaction } from './lmdb-barrier.ts';
import { LAYER_PUT, LAYER_REMOVE } from './lmdb-flush-protocol.ts';
import { LmdbFlushThread } from './lmdb-flush-thread.ts';

/** A deleted key in a write buffer. */
export const TOMBSTONE: unique symbol = Symbol('deleted');

/** lmdb's largest key (lmdb-js builds lmdb with 4 KiB pages: 1978 bytes). */
const MAX_KEY_BYTES = 1978;

/** Layers sent to the flush thread and not yet written, at most: a third waits for the first. */
const MAX_LAYERS_IN_FLIGHT = 2;

/** A table's write buffers as the write-behind sees them (LmdbTable). */
export interface BufferedTable {
  /** Writes not yet sent: the key's bytes as a latin1 string, the value (or TOMBSTONE). */
  pending: Map<string, unknown>;
  /** Write buffers sent to the flush thread and not yet known written, oldest first: reads look here after `pending`. */
  readonly flushing: Map<string, unknown>[];
  /** Whether values are JavaScript values to encode (else bytes). */
  readonly encoded: boolean;
}

/** What the write-behind needs of lmdb's environment and the values' codec. */
export interface WriteBehindTarget {
  tables: readonly BufferedTable[];
  encode(value: unknown): Uint8Array;
  /** A read transaction of lmdb as it is now. */
  readTransaction(): LmdbTransaction;
  /** The thread's implicit reads see what the flush thread committed (lmdb-js renews its read transaction). */
  renewReads(): void;
  /** Names the state of a key (a value that cannot be written says whose it is). */
  describeKey(key: Buffer): string;
  /** The error to throw when the flush thread could not write a layer (lmdb's, or the disk's). */
  writeFailed(error: Error): Error;
}

interface Layer {
  seq: number;
}

/**
 * The disk backend's write-behind (RocksDB's immutable memtables, on lmdb): a full write buffer is
 * encoded on the task thread (values to bytes, O(entries)) and sent to the flush thread
 * (lmdb-flush-worker.ts), which writes it in one transaction while the task goes on; the buffer
 * stays readable as a layer until it is known written. So lmdb's own cost (pages read from a file
 * larger than memory, writes throttled while the kernel writes back) no longer stops the task.
 * At most {@link MAX_LAYERS_IN_FLIGHT} layers are in flight: the next send waits for the oldest
 * (back pressure). A checkpoint's {@link barrier} is taken once its layers are written.
 */
export class LmdbWriteBehind {
  readonly #target: WriteBehindTarget;
  readonly #thread: LmdbFlushThread;
  readonly #layers: Layer[] = [];
  #seq = 0;
  /** Barriers whose read transaction waits for the layers before them. */
  readonly #barriers: LmdbBarrier[] = [];
  #size = 1 << 20;
  /** Buffers of layers written, given back by the flush thread, for the next layers. */
  readonly #freeBuffers: ArrayBuffer[] = [];

  constructor(target: WriteBehindTarget, environment: object, databases: readonly string[]) {
    this.#target = target;
    this.#thread = new LmdbFlushThread(environment, databases, (error) => target.writeFailed(error));
    this.#thread.onWritten = (buffer) => {
      if (buffer !== undefined && this.#freeBuffers.length < MAX_LAYERS_IN_FLIGHT) this.#freeBuffers.push(buffer);
      try {
        this.reap();
      } catch (error) {
        // Thrown to the task at its next write or flush; a snapshot waiting for a barrier fails with it.
        for (const barrier of this.#barriers.splice(0)) barrier.fail(error as Error);
      }
    };
  }

  /** Whether layers are in flight. */
  get inFlight(): boolean {
    return this.#layers.length > 0;
  }

  /** Whether as many layers are in flight as may be (the next send would wait). */
  get full(): boolean {
    return this.#layers.length >= MAX_LAYERS_IN_FLIGHT;
  }

  /** Whether a barrier waits for its layers (writes after it must not reach lmdb yet). */
  get holding(): boolean {
    return this.#barriers.length > 0;
  }

  /**
   * Drops the layers the flush thread has written (the thread's reads then see them in lmdb) and,
   * once none is in flight, takes the barriers waiting. Returns whether none is in flight. Throws
   * when the flush thread failed.
   */
  reap(): boolean {
    if (this.#layers.length === 0) return true;
    const written = this.#thread.written();
    if ((this.#layers[0] as Layer).seq > written) return false;
    const tables = this.#target.tables;
    while (this.#layers.length > 0 && (this.#layers[0] as Layer).seq <= written) {
      this.#layers.shift();
      for (const table of tables) table.flushing.shift();
    }
    this.#target.renewReads();
    if (this.#layers.length > 0) return false;
    this.#thread.idle();
    this.#takeBarriers();
    return true;
  }

  /** Blocks until every layer is written (and the barriers are taken). */
  settle(): void {
    const last = this.#layers.at(-1);
    if (last !== undefined) this.#thread.waitFor(last.seq);
    this.reap();
  }

  /**
   * Sends the tables' pending writes as a layer (blocking first while {@link MAX_LAYERS_IN_FLIGHT}
   * are in flight). A value that cannot be encoded throws, and nothing is sent.
   */
  send(): void {
    if (this.#layers.length >= MAX_LAYERS_IN_FLIGHT) {
      this.#thread.waitFor((this.#layers[0] as Layer).seq);
      this.reap();
    }
    const tables = this.#target.tables;
    const bytes = this.#encode(tables);
    if (bytes.length === 0) {
      this.#freeBuffers.push(bytes.buffer as ArrayBuffer);
      return;
    }
    const seq = ++this.#seq;
    for (const table of tables) {
      table.flushing.push(table.pending);
      table.pending = new Map();
    }
    this.#layers.push({ seq });
    this.#thread.send(seq, bytes);
  }

  /** A barrier: taken now when nothing is in flight, else once the layers sent so far are written. */
  barrier(): LmdbBarrier {
    this.reap(); // a failed write fails the barrier's checkpoint now
    const barrier = new LmdbBarrier();
    this.#barriers.push(barrier);
    if (this.#layers.length === 0) this.#takeBarriers();
    return barrier;
  }

  /** Closes the flush thread's side of the environment (after waiting for every layer). */
  async close(): Promise<void> {
    try {
      this.settle();
    } catch {
      // Closing anyway: the store's state is given up.
    }
    for (const barrier of this.#barriers.splice(0)) barrier.release();
    await this.#thread.close();
  }

  #takeBarriers(): void {
    while (this.#barriers.length > 0) {
      const barrier = this.#barriers.shift() as LmdbBarrier;
      if (!barrier.released) barrier.take(this.#target.readTransaction());
    }
  }

  /** The pending writes of every table as a layer's bytes (lmdb-flush-worker.ts reads them). */
  #encode(tables: readonly BufferedTable[]): Uint8Array {
    let out = this.#buffer();
    let at = 0;
    const room = (bytes: number) => {
      if (at + bytes <= out.length) return;
      let size = out.length * 2;
      while (size < at + bytes) size *= 2;
      const bigger = Buffer.allocUnsafeSlow(size);
      out.copy(bigger, 0, 0, at);
      out = bigger;
    };
    for (let index = 0; index < tables.length; index++) {
      const table = tables[index] as BufferedTable;
      for (const [text, value] of table.pending) {
        if (text.length > MAX_KEY_BYTES) throw this.#keyTooLong(text);
        const value_ = value === TOMBSTONE ? undefined : table.encoded ? this.#encodeValue(text, value) : (value as Uint8Array);
        const valueLength = value_?.length ?? 0;
        room(8 + text.length + valueLength);
        out[at] = index;
        out[at + 1] = value === TOMBSTONE ? LAYER_REMOVE : LAYER_PUT;
        out.writeUInt16BE(text.length, at + 2);
        at += 4;
        at += out.write(text, at, 'latin1');
        out.writeUInt32BE(valueLength, at);
        at += 4;
        if (value_ !== undefined) {
          out.set(value_, at);
          at += valueLength;
        }
      }
    }
    // The next layer starts at about this one's size.
    this.#size = Math.max(1 << 16, out.length);
    return new Uint8Array(out.buffer, 0, at);
  }

  /** A buffer of at least the last layer's size: one the flush thread gave back, else a new one. */
  #buffer(): Buffer {
    // The buffers given back may still wait on the port (the task thread has not yielded since).
    if (this.#freeBuffers.length === 0) this.#thread.deliverReplies();
    for (let free = this.#freeBuffers.pop(); free !== undefined; free = this.#freeBuffers.pop()) {
      if (free.byteLength >= this.#size) return Buffer.from(free);
    }
    return Buffer.allocUnsafeSlow(this.#size);
  }

  #keyTooLong(text: string): WeirError {
    return new WeirError(
      'STATE_NOT_SERIALIZABLE',
      `${this.#target.describeKey(Buffer.from(text, 'latin1'))} has a key of ${text.length} bytes (with its key group, state and namespace): the disk state backend takes up to ${MAX_KEY_BYTES}`,
      { hint: 'key by something shorter (a hash of a long key), or run the job with stateBackend: heap' },
    );
  }

  #encodeValue(text: string, value: unknown): Uint8Array {
    try {
      checkCloneable(value);
      return this.#target.encode(value);
    } catch (error) {
      throw new WeirError(
        'STATE_NOT_SERIALIZABLE',
        `${this.#target.describeKey(Buffer.from(text, 'latin1'))} holds a value the disk state backend cannot write: ${(error as Error).message}`,
        {
          hint: 'state values must be structured-cloneable: primitives, plain objects, arrays, Map, Set, Date, typed arrays; no functions, symbols or class instances with behaviour',
          cause: error,
        },
      );
    }
  }
}
