import { CheckpointDirectory } from './checkpoint-directory.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import type { CheckpointMetadata, StateHandle } from './checkpoint-metadata.ts';
import type { CheckpointStorage, StateFileWriter, StoredCheckpointMetadata } from './checkpoint-storage.ts';
import { CheckpointStorageLock } from './checkpoint-storage-lock.ts';
import { hasCommittedMarker, readMetadataFile, writeCommittedMarker, writeMetadataFile } from './metadata-files.ts';
import type { StateKind } from './state-file-name.ts';
import { openStateFile, readStateFile, readStateFilePieces, writeStateFile } from './state-files.ts';
import type { LockOptions, StorageLock } from './storage-lock.ts';
import { storageTestDelay } from './storage-test-delays.ts';

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
  /** This process's lock of the folder, once taken: it fences the writes that make or unmake checkpoints. */
  #lock: StorageLock | undefined;

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

  async lock(options: LockOptions): Promise<StorageLock> {
    this.#lock = await CheckpointStorageLock.acquire(this.#directory.path, options);
    return this.#lock;
  }

  async verifyLock(): Promise<void> {
    await this.#lock?.verify();
  }

  checkpointLocation(checkpointId: number): CheckpointLocation {
    return this.#directory.checkpointLocation(checkpointId);
  }

  savepointLocation(checkpointId: number): CheckpointLocation {
    return this.#directory.savepointLocation(checkpointId);
  }

  async writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle> {
    await storageTestDelay('state', location);
    return writeStateFile(location, operatorUid, subtaskIndex, kind, bytes);
  }

  async openState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind): Promise<StateFileWriter> {
    const file = await openStateFile(location, operatorUid, subtaskIndex, kind);
    let first = true;
    return {
      write: async (pieces) => {
        await file.write(pieces);
        // Held once the file is partly written: a crash test's kill leaves a partial state file behind.
        if (first) await storageTestDelay(kind === 'keyed-base' ? 'base' : 'state', location, ` (a streamed ${kind} state file, its first pieces written)`);
        first = false;
      },
      finish: () => file.finish(),
      abort: () => file.abort(),
    };
  }

  async readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    await storageTestDelay('restore', location);
    return readStateFile(location, handle);
  }

  async *readStatePieces(location: CheckpointLocation | string, handle: StateHandle): AsyncGenerator<Uint8Array> {
    await storageTestDelay('restore', location);
    yield* readStateFilePieces(location, handle);
  }

  async commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
    await storageTestDelay('metadata', location);
    await writeMetadataFile(location, metadata, this.#lock);
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
    return writeCommittedMarker(location, this.#lock);
  }

  isMarkedCommitted(path: string): Promise<boolean> {
    return hasCommittedMarker(path);
  }

  async discard(location: CheckpointLocation): Promise<void> {
    await storageTestDelay('discard', location);
    // A process that lost the lock deletes nothing: the folder may hold the new owner's checkpoints.
    await this.#lock?.verify();
    await this.#directory.discard(location);
  }

  async discardMetadata(location: CheckpointLocation): Promise<void> {
    await storageTestDelay('discard', location);
    await this.#lock?.verify();
    await this.#directory.discardMetadata(location);
  }

  neighbours(): Promise<string[]> {
    return this.#directory.neighbours();
  }
}
