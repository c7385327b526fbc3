import { close, fstatSync, openSync, read, rm } from 'node:fs';
import { join } from 'node:path';
import { WeirError } from '../core/errors/weir-error.ts';
import type { AsyncKeyedStateSnapshot } from '../core/state/keyed-state-backend.ts';
import { ChangedKeys } from './dirty-keys.ts';
import type { DeltaKeys, IncrementalTracker } from './incremental-tracker.ts';
import type { KeyGroupRange } from './key-group-range.ts';
import { type LmdbBaseHeader, writeLmdbBaseHeader } from './lmdb-base-format.ts';
import type { LmdbCopy } from './lmdb-copy-starts.ts';
import { LmdbSnapshotWriter, type SnapshotState } from './lmdb-snapshot-writer.ts';
import type { LmdbBarrier, LmdbStore } from './lmdb-store.ts';
import { SnapshotPieces } from './snapshot-pieces.ts';
import { compressZstdChunk, ZSTD_CHUNK_MAX_BYTES } from './zstd-chunks.ts';

/** Bytes of lmdb's file per piece, each compressed on its own (a chunk, zstd-chunks.ts). */
const FILE_PIECE_BYTES = ZSTD_CHUNK_MAX_BYTES;
/** Pieces in flight: read ahead (threads of libuv's pool) while one is compressed (one at a time). */
const PIECES_IN_FLIGHT = 4;

/** A piece of lmdb's file being read and compressed: its chunk header and frame once done. */
interface FilePiece {
  settled: Promise<void>;
  out: Uint8Array[] | undefined;
  failure: unknown;
}

/** What a base snapshot is taken of: the store, its tracker, and the states and timer sequences at the barrier. */
export interface LmdbBaseSnapshotOptions {
  store: LmdbStore;
  tracker: IncrementalTracker;
  checkpointId: number;
  states: readonly SnapshotState[];
  timerSequences: [number, number];
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  operatorName: string;
  now: number;
  onEnd: () => void;
}

/**
 * The disk backend's full snapshot for incremental checkpoints (format in lmdb-base-format.ts):
 * lmdb's own file, copied by lmdb (its compacting copy) in a thread of libuv's pool while the task goes on,
 * then a correction read from the barrier's read transaction. The file goes out in pieces each
 * compressed (zstd) in libuv's pool. The synchronous part (the
 * constructor) sends the write buffer to the flush thread and sets a barrier (LmdbStore.barrier),
 * keeps the incremental tracker's changes from the barrier on, and asks for the copy, which starts
 * once the barrier's writes are in lmdb. The copy reads lmdb from a transaction of its own that
 * begins a little later. Until it has, the store's write buffer holds
 * the task's writes (LmdbStore.startCopy), so the copy usually holds the barrier's state exactly:
 * the correction is then empty and the tracker lets go of the keys at once. When a write could not
 * wait, the copy may hold writes made after the barrier; every key written between the barrier and
 * the end of the copy is in the tracker, and the correction (a canonical incremental snapshot of
 * those keys, their values at the barrier) puts them back. Then the steps hand out the header, the
 * file in 4 MiB pieces and the correction.
 * So the task never reads the whole state, and a restore at the same key-group range opens the
 * file instead of re-inserting every key.
 */
export class LmdbBaseSnapshot implements AsyncKeyedStateSnapshot {
  readonly delta = undefined;
  /** The checkpoint this base is taken for. */
  readonly checkpointId: number;
  readonly #options: LmdbBaseSnapshotOptions;
  readonly #header: LmdbBaseHeader;
  readonly #folder: string;
  /** The barrier: its read transaction is what the correction reads. */
  readonly #barrier: LmdbBarrier;
  #copy: Promise<void> | undefined;
  /** Settles when lmdb's copy ended, whether the snapshot is still wanted or not (never rejects). */
  readonly copied: Promise<void>;
  #copyFailure: unknown;
  #fd: number | undefined;
  #fileLength = 0;
  #fileRead = 0;
  /**
   * The pieces of the file being read and compressed, oldest first (in threads of libuv's pool: a
   * piece from a cold disk takes tens of ms), up to {@link PIECES_IN_FLIGHT}; they join the output in order.
   */
  readonly #pieces: FilePiece[] = [];
  /** The last piece's compression: the next one's waits for it. */
  #compressing: Promise<void> = Promise.resolve();
  /** Buffers of pieces written, for the next pieces (at most PIECES_IN_FLIGHT are ever made). */
  readonly #freeBuffers: Buffer[] = [];
  #correction: LmdbSnapshotWriter | undefined;
  readonly #out: SnapshotPieces;
  #ended = false;
  /** lmdb's copy: whether it holds the barrier's state exactly (then the correction is empty). */
  #lmdbCopy: LmdbCopy | undefined;
  /** The tracker keeps the keys written since the barrier for the correction. */
  #pinned = true;

  constructor(options: LmdbBaseSnapshotOptions) {
    this.#options = options;
    this.checkpointId = options.checkpointId;
    this.#out = new SnapshotPieces(options.operatorName);
    const { store, tracker, checkpointId } = options;
    this.#folder = join(store.dir, `base-${checkpointId}`);
    this.#barrier = store.barrier();
    tracker.pin(checkpointId);
    this.#header = {
      maxParallelism: options.maxParallelism,
      keyGroupRange: options.keyGroupRange,
      states: options.states.map(({ name, kind, ttlWrapped }) => ({ name, kind, ttlWrapped })),
      structures: store.valueStructures(),
      timerSequences: options.timerSequences,
    };
    try {
      this.#lmdbCopy = store.startCopy(this.#folder, this.#barrier, () => {
        // The copy's read transaction began before any write after the barrier: no correction will
        // be needed, so the tracker need not keep the keys written since for it.
        if (this.#lmdbCopy?.exact === true) this.#unpin();
      });
    } catch (error) {
      // No copy started (its folder could not be made): the barrier's read transaction and the
      // tracker's pin go now, or lmdb could never reuse a page freed after it and the tracker never
      // drop an epoch.
      this.#barrier.release();
      this.#unpin();
      throw error;
    }
    this.copied = this.#copy = this.#lmdbCopy.done.then(
      () => {
        this.#copy = undefined;
      },
      (error: unknown) => {
        this.#copy = undefined;
        this.#copyFailure = error ?? new Error('the copy failed');
      },
    );
  }

  get done(): boolean {
    return this.#ended;
  }

  waiting(): Promise<void> | undefined {
    return this.#ended ? undefined : (this.#copy ?? this.#pieces[0]?.settled);
  }

  step(budgetMs: number): boolean {
    if (this.#ended) return true;
    if (this.#copy !== undefined) return false;
    const until = performance.now() + budgetMs;
    try {
      if (this.#copyFailure !== undefined) throw this.#copyError(this.#copyFailure);
      if (this.#fd === undefined) this.#openFile();
      for (let piece = this.#pieces[0]; piece?.out !== undefined; piece = this.#pieces[0]) {
        this.#pieces.shift();
        for (const bytes of piece.out) this.#out.push(bytes);
      }
      const failed = this.#pieces[0]?.failure;
      if (failed !== undefined) throw this.#copyError(failed);
      while (this.#pieces.length < PIECES_IN_FLIGHT && this.#fileRead < this.#fileLength) this.#readPiece();
      if (this.#pieces.length > 0) return false;
      if (this.#correction === undefined) this.#startCorrection();
      const correction = this.#correction as LmdbSnapshotWriter;
      const done = correction.step(Math.max(0, until - performance.now()));
      for (const piece of correction.drain()) this.#out.push(piece);
      if (!done) return false;
      this.#out.complete = true;
      this.release();
      return true;
    } catch (error) {
      this.#out.failure = error;
      this.release();
      throw error;
    }
  }

  /** A base is written off the thread (lmdb's copy, the file's reads): it cannot be finished at once. */
  runToEnd(): void {
    if (this.#ended) return;
    throw new WeirError('CHECKPOINT_NOT_COMPLETED', `operator "${this.#options.operatorName}": the disk backend's base is written off the task thread`, {
      fault: 'internal',
      hint: 'step the snapshot, awaiting waiting() in between',
    });
  }

  drain(): Uint8Array[] {
    return this.#out.drain();
  }

  assertComplete(): void {
    this.#out.assertComplete();
  }

  result(): Uint8Array {
    return this.#out.result();
  }

  /** Gives the snapshot up (or it is written): the copy's file goes, the barrier's transaction ends, the tracker lets go of the changes. */
  release(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#out.complete) this.#out.drop();
    this.#correction?.release();
    this.#correction = undefined;
    const fd = this.#fd;
    this.#fd = undefined;
    // A read still running uses the descriptor: it is closed once that read ended.
    if (fd !== undefined) void Promise.all(this.#pieces.map((piece) => piece.settled)).then(() => close(fd, () => {}));
    const folder = this.#folder;
    const copy = this.#copy;
    // A copy still running writes into its folder: delete it once lmdb is done with it. Off the
    // task thread (libuv's pool): unlinking a copy of several GB takes the file system a while.
    const remove = () => rm(folder, { recursive: true, force: true }, () => {});
    if (copy === undefined) remove();
    else void copy.finally(remove);
    this.#barrier.release();
    this.#unpin();
    this.#options.onEnd();
  }

  #openFile(): void {
    const fd = openSync(join(this.#folder, 'data.mdb'), 'r');
    this.#fd = fd;
    this.#fileLength = fstatSync(fd).size;
    this.#out.push(writeLmdbBaseHeader(this.#header, this.#fileLength));
  }

  /** Starts reading and compressing the next piece of the file; it joins the output in order, once done ({@link waiting} until then). */
  #readPiece(): void {
    const fd = this.#fd as number;
    const start = this.#fileRead;
    const length = Math.min(FILE_PIECE_BYTES, this.#fileLength - start);
    // The pieces' buffers are reused: a base of 50M keys reads 3.9 GB, which as garbage held the
    // worker's memory up (external memory triggers a GC late in a large heap).
    const buffer = this.#freeBuffers.pop() ?? Buffer.allocUnsafeSlow(FILE_PIECE_BYTES);
    const raw = buffer.subarray(0, length);
    this.#fileRead += length;
    const readFrom = (offset: number, done: (error: unknown) => void): void =>
      read(fd, raw, offset, length - offset, start + offset, (error, bytes) => {
        if (error !== null) done(error);
        else if (bytes === 0) done(new Error(`lmdb's copy ended at byte ${start + offset} of ${this.#fileLength}`));
        else if (offset + bytes < length) readFrom(offset + bytes, done);
        else done(undefined);
      });
    const piece: FilePiece = { settled: Promise.resolve(), out: undefined, failure: undefined };
    piece.settled = new Promise<void>((resolve) => {
      const settle = (out: Uint8Array[] | undefined, failure: unknown) => {
        piece.out = out;
        piece.failure = failure;
        // The frame is a buffer of its own: the piece's buffer can take the next piece.
        if (!this.#ended) this.#freeBuffers.push(buffer);
        resolve();
      };
      readFrom(0, (error) => {
        if (error !== undefined || this.#ended) settle(undefined, error ?? new Error('the base was given up'));
        else {
          // One compression at a time (one thread of the pool): on two cores, four at once took the
          // task's core too (at 50M keys it stood still 53 ms at p99 against 34-36 before).
          this.#compressing = this.#compressing.then(() =>
            // A base given up meanwhile compresses nothing more.
            this.#ended
              ? settle(undefined, new Error('the base was given up'))
              : compressZstdChunk(raw).then(
                  (chunk) => settle(chunk, undefined),
                  (failure: unknown) => settle(undefined, failure),
                ),
          );
        }
      });
    });
    this.#pieces.push(piece);
  }

  /** The tracker lets go of the keys written since the barrier (once: the correction needs none, or the snapshot ended). */
  #unpin(): void {
    if (!this.#pinned) return;
    this.#pinned = false;
    this.#options.tracker.unpin(this.#options.checkpointId);
  }

  /**
   * The correction: every key written since the barrier (up to now, so past the copy's start), its
   * value at the barrier; none when the copy holds the barrier's state exactly (its read
   * transaction began before any write after the barrier reached lmdb).
   */
  #startCorrection(): void {
    const { store, tracker, checkpointId, states, maxParallelism, keyGroupRange, operatorName, now } = this.#options;
    const changed: DeltaKeys =
      this.#lmdbCopy?.exact === true
        ? { base: checkpointId, tables: new Map(), timers: [new ChangedKeys([]), new ChangedKeys([])] }
        : tracker.changedSince(checkpointId);
    // The copy started once the barrier's transaction was taken: it is there (a new barrier would be the wrong state).
    const transaction = this.#barrier.transaction;
    if (transaction === undefined)
      throw new WeirError('CHECKPOINT_NOT_COMPLETED', `operator "${operatorName}": the base's barrier was given up`, { fault: 'internal' });
    this.#correction = new LmdbSnapshotWriter(store, states, maxParallelism, keyGroupRange, operatorName, now, () => {}, changed, transaction);
  }

  #copyError(error: unknown): WeirError {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOSPC' ? 'the disk is full' : (error as Error).message;
    return new WeirError(
      'STATE_WRITE_FAILED',
      `operator "${this.#options.operatorName}": the disk state backend could not copy its store for a checkpoint: ${why}`,
      {
        fault: 'external',
        hint: 'check the free space and health of the disk under stateDir (the copy needs room for about the store once more)',
        cause: error,
      },
    );
  }
}
