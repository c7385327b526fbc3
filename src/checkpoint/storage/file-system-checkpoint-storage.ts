import { CheckpointDirectory } from './checkpoint-directory.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import type { CheckpointMetadata, StateHandle } from './checkpoint-metadata.ts';
import type { CheckpointStorage, StoredCheckpointMetadata } from './checkpoint-storage.ts';
import { CheckpointStorageLock } from './checkpoint-storage-lock.ts';
import { hasCommittedMarker, readMetadataFile, writeCommittedMarker, writeMetadataFile } from './metadata-files.ts';
import type { StateKind } from './state-file-name.ts';
import { readStateFile, writeStateFile } from './state-files.ts';
import type { LockOptions, StorageLock } from './storage-lock.ts';

/**
 * Checkpoints and savepoints in a folder (Flink's file-system checkpoint storage):
 *
 *   <directory>/
 *     chk-<N>/                          checkpoint N
 *       <operatorUid>-<subtask>.keyed     keyed state bytes of one subtask (opaque here)
 *       <operatorUid>-<subtask>.operator  operator state bytes (opaque here)
 *       _metadata                         JSON, written last and atomically
 *     savepoints/savepoint-<N>-<hex>/   the same contents, plus `_committed`; never deleted automatically
 *     _lock                             JSON: the process that writes the folder (CheckpointStorageLock)
 *
 * The folders (CheckpointDirectory), the state files (state-files.ts) and the metadata
 * (metadata-files.ts) are apart; this class puts them behind the {@link CheckpointStorage}
 * contract. See docs/checkpoint-storage.md.
 */
export class FileSystemCheckpointStorage implements CheckpointStorage {
  readonly #directory: CheckpointDirectory;

  constructor(directory: string) {
    this.#directory = new CheckpointDirectory(directory);
  }

  /** The absolute path of the checkpoint folder. */
  get root(): string {
    return this.#directory.path;
  }

  initialize(): Promise<void> {
    return this.#directory.initialize();
  }

  lock(options: LockOptions): Promise<StorageLock> {
    return CheckpointStorageLock.acquire(this.#directory.path, options);
  }

  checkpointLocation(checkpointId: number): CheckpointLocation {
    return this.#directory.checkpointLocation(checkpointId);
  }

  savepointLocation(checkpointId: number): CheckpointLocation {
    return this.#directory.savepointLocation(checkpointId);
  }

  writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle> {
    return writeStateFile(location, operatorUid, subtaskIndex, kind, bytes);
  }

  readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    return readStateFile(location, handle);
  }

  commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
    return writeMetadataFile(location, metadata);
  }

  readMetadata(path: string): Promise<StoredCheckpointMetadata> {
    return readMetadataFile(path);
  }

  hasMetadata(location: CheckpointLocation): Promise<boolean> {
    return this.#directory.hasMetadata(location);
  }

  listLocations(kind: CheckpointLocation['kind']): Promise<CheckpointLocation[]> {
    return this.#directory.listLocations(kind);
  }

  sizeOf(location: CheckpointLocation): Promise<number> {
    return this.#directory.sizeOf(location);
  }

  markCommitted(location: CheckpointLocation): Promise<void> {
    return writeCommittedMarker(location);
  }

  isMarkedCommitted(path: string): Promise<boolean> {
    return hasCommittedMarker(path);
  }

  discard(location: CheckpointLocation): Promise<void> {
    return this.#directory.discard(location);
  }

  neighbours(): Promise<string[]> {
    return this.#directory.neighbours();
  }
}
