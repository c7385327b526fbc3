import type { CheckpointLocation } from './checkpoint-location.ts';
import type { CheckpointMetadata, StateHandle } from './checkpoint-metadata.ts';
import type { StateKind } from './state-file-name.ts';
import type { LockOptions, StorageLock } from './storage-lock.ts';

/**
 * A state file written piece by piece, as a keyed snapshot's writer produces it (the snapshot is
 * never held whole): {@link write} in order, then {@link finish} (durable, hashed: the handle), or
 * {@link abort} (what was written goes). The same file, written once and checked on read, as
 * {@link CheckpointStorage.writeState} writes.
 */
export interface StateFileWriter {
  /** Appends pieces; the writer owns them from now on (it may hold them until a part fills, and frees them): the caller must not use them again. */
  write(pieces: readonly Uint8Array[]): Promise<void>;
  /** Makes the file durable; its handle names it, its size and its SHA-256. */
  finish(): Promise<StateHandle>;
  /** Gives the file up (a failed or declined checkpoint): what was written is deleted, best effort. */
  abort(): Promise<void>;
}

/** A completed checkpoint's or savepoint's metadata, with where it was read from. */
export type StoredCheckpointMetadata = CheckpointMetadata & { location: CheckpointLocation };

/**
 * Where a job's checkpoints and savepoints live (Flink's CheckpointStorage with its storage
 * access): the one contract the coordinator, the tasks and the completed-checkpoint store use,
 * so another implementation (an object store) fills it without touching the runtime. The layout
 * and the guarantees every implementation keeps are in docs/checkpoint-storage.md:
 *
 * - a location without metadata is not a checkpoint (aborted, or still being written);
 * - {@link commitMetadata} is atomic: before it the checkpoint does not exist, after it it does;
 * - state files are written once and read back only when their size and SHA-256 match;
 * - locations are only ever deleted by {@link discard}, metadata first.
 *
 * {@link openCheckpointStorage} picks the implementation from the `checkpointing.storage` setting.
 */
export interface CheckpointStorage {
  /** The storage's root as `checkpointing.storage` names it: every worker opens the same storage from it. */
  readonly root: string;
  /** Creates the root when needed and checks it can be written. */
  initialize(): Promise<void>;
  /** Makes this process the storage's one writer (after {@link initialize}); refuses with CHECKPOINT_STORAGE_LOCKED while another one lives. */
  lock(options: LockOptions): Promise<StorageLock>;
  /**
   * Resolves when this process still holds the lock it took with {@link lock} (at once when it took
   * none); rejects with CHECKPOINT_STORAGE_LOCK_LOST (and the lock's `onLost` is told) when another
   * process took it over. `commitMetadata`, `markCommitted` and `discard` check it themselves.
   */
  verifyLock(): Promise<void>;
  /** Where checkpoint `checkpointId` goes (`chk-<N>`); nothing is created yet. */
  checkpointLocation(checkpointId: number): CheckpointLocation;
  /** A new location for a savepoint taken as checkpoint `checkpointId`; nothing is created yet. */
  savepointLocation(checkpointId: number): CheckpointLocation;
  /** Writes one subtask's state snapshot durably, once; the handle names it, its size and its SHA-256. */
  writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle>;
  /**
   * Opens one subtask's state file to write piece by piece (a keyed snapshot as it is produced, never
   * held whole): the same file as {@link writeState}'s, written once. A storage without it gets the
   * pieces through writeState at the end (open-state-writer.ts holds them).
   */
  openState?(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind): Promise<StateFileWriter>;
  /** Reads a state snapshot back (from a location, or a folder a restore names), checking it against its handle. */
  readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array>;
  /**
   * Reads a state file a piece at a time (never held whole: the disk backend's base streams into its
   * working folder), checking its size and SHA-256 after the last piece: the iteration throws when
   * they do not match, so a reader uses nothing before it ended. A storage without it is read with
   * {@link readState}, in one piece (read-state-pieces.ts).
   */
  readStatePieces?(location: CheckpointLocation | string, handle: StateHandle): AsyncIterable<Uint8Array>;
  /** Completes a checkpoint or savepoint: its metadata, written atomically and last. */
  commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void>;
  /** Reads a completed checkpoint or savepoint, given its location's path (or its metadata file's). */
  readMetadata(path: string): Promise<StoredCheckpointMetadata>;
  /** Whether a location holds metadata (it may still not read: corrupt, or too new). */
  hasMetadata(location: CheckpointLocation): Promise<boolean>;
  /** Every location of this kind in the storage, complete or not, ascending by checkpoint id. */
  listLocations(kind: CheckpointLocation['kind']): Promise<CheckpointLocation[]>;
  /** The bytes a location holds, all files together; 0 when it is gone. */
  sizeOf(location: CheckpointLocation): Promise<number>;
  /** Records that every transaction a savepoint holds has been committed (its `_committed`). */
  markCommitted(location: CheckpointLocation): Promise<void>;
  /** Whether a checkpoint or savepoint (by path) carries the committed record. */
  isMarkedCommitted(path: string): Promise<boolean>;
  /** Deletes a location of this storage, metadata first; refuses anything else. */
  discard(location: CheckpointLocation): Promise<void>;
  /**
   * Deletes only a checkpoint's `_metadata` (it is no longer a completed checkpoint), keeping its
   * state files: retention's way to let go of a checkpoint whose files newer ones still name.
   * A storage without it has such checkpoints kept whole, with every file their metadata names.
   */
  discardMetadata?(location: CheckpointLocation): Promise<void>;
  /** The roots of the storages beside this one (the other folders next to its root, as `checkpointing.storage` names them): a cluster task's earlier owners. */
  neighbours(): Promise<string[]>;
}
