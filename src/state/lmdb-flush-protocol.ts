import type { MessagePort } from 'node:worker_threads';
import type { ThreadFailure } from './thread-failure.ts';

/*
 * What a store and the flush thread (lmdb-flush-worker.ts) send each other. Kept apart from the
 * thread's module, which only the thread loads (it loads lmdb and listens on its parent port).
 */

/** What a store sends to open its environment here. */
export interface FlushOpenMessage {
  type: 'open';
  /** lmdb-js's options of the store's environment (the same as the store's: one environment per file). */
  options: object;
  /** The store's databases, in the order a layer's table numbers name them. */
  databases: string[];
  port: MessagePort;
  /** [last sequence written, sequence of a write that failed (0: none)]. */
  flag: Int32Array;
}

/** A layer to write, or the end. */
export type FlushPortMessage = { type: 'layer'; seq: number; bytes: Uint8Array } | { type: 'close' };

/**
 * What the thread answers on a store's port. A layer written comes back with its buffer (moved, not
 * copied) for the store's next layer: a buffer left to the thread would be freed only once the
 * thread's own heap is collected, which its few allocations seldom make happen (at 50M keys 900 MB
 * of layers waited for it, and glibc kept the memory once they were freed).
 */
export type FlushReply = { type: 'written'; seq: number; buffer?: ArrayBuffer } | { type: 'failed'; seq: number; error: ThreadFailure } | { type: 'closed' };

/** Entry operations in a layer. */
export const LAYER_PUT = 1;
export const LAYER_REMOVE = 2;
