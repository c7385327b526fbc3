import { createHash } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DEFAULT_STATE_DIR } from '../../core/config/default-state-dir.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import { checkpointFolderName, parseCheckpointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import type { CheckpointMetadata, StateHandle } from './checkpoint-metadata.ts';
import type { CheckpointStorage, StateFileWriter } from './checkpoint-storage.ts';
import { openStateWriter } from './open-state-writer.ts';
import { readStatePieces } from './read-state-pieces.ts';
import { type StateKind, stateFileName } from './state-file-name.ts';
import { readStateFilePieces, sha256InSlices } from './state-files.ts';
import type { LockOptions, StorageLock } from './storage-lock.ts';

/** What a restore read from the local copies and what from the checkpoint storage. */
export interface LocalRecoveryReads {
  localFiles: number;
  localBytes: number;
  storageFiles: number;
}

/**
 * Flink's local recovery (`execution.state-recovery.from-local`, the secondary copy): every state
 * file a task writes into a checkpoint is also copied to a folder on this machine,
 * `<stateDir>/local-recovery/<job>-<storage hash>/chk-<N>/`, and a restore on the same machine
 * reads each file from there when its copy matches the handle (size and SHA-256), else from the
 * checkpoint storage. The copies are a cache, never the truth: one that is missing, damaged or of
 * another run is read from the storage, and a failed copy never fails a checkpoint. Checkpoints
 * only (savepoints are read from where they are); a checkpoint's copies go when the storage
 * discards it, and copies of checkpoints the storage no longer holds when the job starts.
 */
export class LocalRecoveryStorage implements CheckpointStorage {
  readonly #storage: CheckpointStorage;
  readonly #folder: string;
  readonly reads: LocalRecoveryReads = { localFiles: 0, localBytes: 0, storageFiles: 0 };

  /** As the storage's, when it has one (retention keeps a checkpoint whole when it has not): the copies stay with the files. */
  readonly discardMetadata?: (location: CheckpointLocation) => Promise<void>;

  constructor(storage: CheckpointStorage, folder: string) {
    this.#storage = storage;
    this.#folder = folder;
    const discardMetadata = storage.discardMetadata?.bind(storage);
    if (discardMetadata !== undefined) this.discardMetadata = discardMetadata;
  }

  get root(): string {
    return this.#storage.root;
  }

  /** The folder of the local copies. */
  get folder(): string {
    return this.#folder;
  }

  async initialize(): Promise<void> {
    await this.#storage.initialize();
  }

  /** Deletes the copies of checkpoints the storage does not hold (any longer): call once the job's process holds the storage's lock. */
  async pruneCopies(): Promise<void> {
    const held = new Set((await this.#storage.listLocations('checkpoint')).map((location) => checkpointFolderName(location.checkpointId)));
    const names = await readdir(this.#folder).catch(() => [] as string[]);
    await Promise.all(names.filter((name) => !held.has(name)).map((name) => rm(join(this.#folder, name), { recursive: true, force: true })));
  }

  lock(options: LockOptions): Promise<StorageLock> {
    return this.#storage.lock(options);
  }

  verifyLock(): Promise<void> {
    return this.#storage.verifyLock();
  }

  checkpointLocation(checkpointId: number): CheckpointLocation {
    return this.#storage.checkpointLocation(checkpointId);
  }

  savepointLocation(checkpointId: number): CheckpointLocation {
    return this.#storage.savepointLocation(checkpointId);
  }

  async writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle> {
    const handle = await this.#storage.writeState(location, operatorUid, subtaskIndex, kind, bytes);
    if (location.kind === 'checkpoint') {
      const copy = join(this.#folder, checkpointFolderName(location.checkpointId), handle.path);
      // A copy is a cache: without it, a restore reads the storage.
      await mkdir(dirname(copy), { recursive: true })
        .then(() => writeFile(copy, bytes))
        .catch(() => rm(copy, { force: true }).catch(() => {}));
    }
    return handle;
  }

  /** The storage's streamed state file, and the local copy written beside it as the pieces come (a failed copy is dropped, never the checkpoint). */
  async openState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind): Promise<StateFileWriter> {
    const stored = await openStateWriter(this.#storage, location, operatorUid, subtaskIndex, kind);
    if (location.kind !== 'checkpoint') return stored;
    const copy = join(this.#folder, checkpointFolderName(location.checkpointId), stateFileName(operatorUid, subtaskIndex, kind));
    let file: FileHandle | undefined = await mkdir(dirname(copy), { recursive: true })
      .then(() => open(copy, 'w'))
      .catch(() => undefined);
    const dropCopy = async () => {
      const held = file;
      file = undefined;
      await held?.close().catch(() => {});
      await rm(copy, { force: true }).catch(() => {});
    };
    return {
      write: async (pieces) => {
        // The copy first: the storage's writer frees the pieces once it wrote them.
        if (file !== undefined) {
          const length = pieces.reduce((sum, piece) => sum + piece.byteLength, 0);
          const written = await file.writev(pieces).catch(() => undefined);
          if (written === undefined || written.bytesWritten !== length) await dropCopy();
        }
        await stored.write(pieces);
      },
      finish: async () => {
        const handle = await stored.finish();
        if (file !== undefined) {
          const held = file;
          file = undefined;
          await held.close().catch(() => rm(copy, { force: true }).catch(() => {}));
        }
        return handle;
      },
      abort: async () => {
        await dropCopy();
        await stored.abort();
      },
    };
  }

  async readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    const local = this.#localCopy(location, handle);
    if (local !== undefined) {
      const bytes = await readFile(local).catch(() => undefined);
      if (bytes !== undefined && bytes.byteLength === handle.size && (await sha256InSlices(bytes)) === handle.sha256) {
        this.reads.localFiles++;
        this.reads.localBytes += bytes.byteLength;
        return bytes;
      }
    }
    this.reads.storageFiles++;
    return this.#storage.readState(location, handle);
  }

  /** The local copy when it matches the handle (hashed first, as it is read), else the storage's file, a piece at a time. */
  async *readStatePieces(location: CheckpointLocation | string, handle: StateHandle): AsyncGenerator<Uint8Array> {
    const local = this.#localCopy(location, handle);
    if (local !== undefined && (await fileMatches(local, handle))) {
      this.reads.localFiles++;
      this.reads.localBytes += handle.size;
      yield* readStateFilePieces(dirname(local), { ...handle, path: basename(local), checkpoint: undefined });
      return;
    }
    this.reads.storageFiles++;
    yield* readStatePieces(this.#storage, location, handle);
  }

  /** Where this machine's copy of a checkpoint's state file would be (none for a savepoint). */
  #localCopy(location: CheckpointLocation | string, handle: StateHandle): string | undefined {
    const id =
      handle.checkpoint ??
      (typeof location === 'string'
        ? parseCheckpointFolderName(basename(location.replace(/\/+$/, '')))
        : location.kind === 'checkpoint'
          ? location.checkpointId
          : undefined);
    return id === undefined ? undefined : join(this.#folder, checkpointFolderName(id), handle.path);
  }

  commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
    return this.#storage.commitMetadata(location, metadata);
  }

  readMetadata(path: string) {
    return this.#storage.readMetadata(path);
  }

  hasMetadata(location: CheckpointLocation): Promise<boolean> {
    return this.#storage.hasMetadata(location);
  }

  listLocations(kind: CheckpointLocation['kind']): Promise<CheckpointLocation[]> {
    return this.#storage.listLocations(kind);
  }

  sizeOf(location: CheckpointLocation): Promise<number> {
    return this.#storage.sizeOf(location);
  }

  markCommitted(location: CheckpointLocation): Promise<void> {
    return this.#storage.markCommitted(location);
  }

  isMarkedCommitted(path: string): Promise<boolean> {
    return this.#storage.isMarkedCommitted(path);
  }

  async discard(location: CheckpointLocation): Promise<void> {
    await this.#storage.discard(location);
    if (location.kind === 'checkpoint') await rm(join(this.#folder, checkpointFolderName(location.checkpointId)), { recursive: true, force: true });
  }

  neighbours(): Promise<string[]> {
    return this.#storage.neighbours();
  }
}

/** A file-name-safe form of a job's name. */
const safe = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || 'job';

/**
 * The job's storage with local recovery when `checkpointing.localRecovery` is on (else as it is):
 * the job master and every worker thread of one process see the same local folder.
 */
export function withLocalRecovery(
  storage: CheckpointStorage,
  config: Pick<EnvironmentConfig, 'checkpointing' | 'stateDir'>,
  jobName: string,
): CheckpointStorage {
  if (config.checkpointing?.localRecovery !== true) return storage;
  const storageHash = createHash('sha256').update(storage.root).digest('hex').slice(0, 12);
  return new LocalRecoveryStorage(storage, join(config.stateDir ?? DEFAULT_STATE_DIR, 'local-recovery', `${safe(jobName)}-${storageHash}`));
}

/** Whether the file at `path` has the handle's size and SHA-256 (read a piece at a time). */
async function fileMatches(path: string, handle: StateHandle): Promise<boolean> {
  try {
    for await (const _ of readStateFilePieces(dirname(path), { ...handle, path: basename(path), checkpoint: undefined }));
    return true;
  } catch {
    return false;
  }
}
