import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, lstat, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { WeirError } from '../../core/errors/weir-error.ts';
import { checkpointFolderName, parseCheckpointFolderName, parseSavepointFolderName, SAVEPOINTS_FOLDER, savepointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import {
  type CheckpointMetadata,
  checkpointMetadataSchema,
  describeSchemaIssues,
  METADATA_FILE_NAME,
  parseCheckpointMetadata,
  type StateHandle,
  stateHandleSchema,
} from './checkpoint-metadata.ts';
import { syncDirectory, writeFileDurably } from './durable-file.ts';

/** Written into a savepoint once its transactions are committed. */
export const COMMITTED_FILE_NAME = '_committed';

import { type StateKind, stateFileName } from './state-file-name.ts';

/** A completed checkpoint's or savepoint's metadata, with where it was read from. */
export type StoredCheckpointMetadata = CheckpointMetadata & { location: CheckpointLocation };

/** One folder of a checkpoint directory, as `weir checkpoints list` shows it. */
export interface CheckpointSummary {
  checkpointId: number;
  /** Whether its `_metadata` exists and reads. */
  completed: boolean;
  location: CheckpointLocation;
  /** Set when completed. */
  metadata?: CheckpointMetadata;
  /** All its files together. */
  sizeBytes: number;
  /** Why a folder that holds `_metadata` is not completed: the error reading it (corrupt, too new). */
  problem?: string;
}

const TEMPORARY_METADATA_FILE_NAME = `${METADATA_FILE_NAME}.tmp`;
const SETTING = 'checkpointing.storage';

/**
 * The on-disk layout of a job's checkpoints and savepoints (Flink's file-system checkpoint storage):
 *
 *   <directory>/
 *     chk-<N>/                          checkpoint N
 *       <operatorUid>-<subtask>.keyed     keyed state bytes of one subtask (opaque here)
 *       <operatorUid>-<subtask>.operator  operator state bytes (opaque here)
 *       _metadata                         JSON, written last and atomically
 *     savepoints/savepoint-<N>-<hex>/   the same contents; never deleted automatically
 *
 * A folder without `_metadata` is not a checkpoint: it was aborted or is still being written.
 * Checkpoint ids only rise, across restarts too: a new run starts above {@link highestCheckpointId}.
 * See docs/checkpoint-storage.md.
 */
export class CheckpointStorage {
  /** Absolute. */
  readonly directory: string;

  constructor(directory: string) {
    if (typeof directory !== 'string' || directory.trim() === '') {
      throw new WeirError('INVALID_CHECKPOINT_STORAGE', `${SETTING} is empty`, {
        hint: 'give a folder for this job’s checkpoints, for example .weir/checkpoints/<job name>',
      });
    }
    this.directory = resolve(directory);
  }

  /** Creates the folder (and its parents) and checks it can be written. */
  async initialize(): Promise<void> {
    try {
      await mkdir(this.directory, { recursive: true });
    } catch (error) {
      if (hasCode(error, 'EEXIST', 'ENOTDIR')) throw this.notAFolder(error);
      if (hasCode(error, 'EACCES', 'EPERM', 'EROFS')) throw this.notWritable(error);
      throw ioError('CHECKPOINT_STORAGE_FAILED', `cannot create the checkpoint folder ${this.directory}`, error);
    }
    const stats = await stat(this.directory).catch((error: unknown) => {
      throw ioError('CHECKPOINT_STORAGE_FAILED', `cannot read the checkpoint folder ${this.directory}`, error);
    });
    if (!stats.isDirectory()) throw this.notAFolder();
    try {
      await access(this.directory, constants.W_OK | constants.X_OK);
    } catch (error) {
      throw this.notWritable(error);
    }
  }

  /** The folder of checkpoint `checkpointId` (`chk-<N>`); nothing is created yet. */
  locationFor(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    return { kind: 'checkpoint', checkpointId, path: join(this.directory, checkpointFolderName(checkpointId)) };
  }

  /** A new folder for a savepoint taken as checkpoint `checkpointId` (`savepoints/savepoint-<N>-<random hex>`). */
  savepointLocation(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    const name = savepointFolderName(checkpointId, randomBytes(6).toString('hex'));
    return { kind: 'savepoint', checkpointId, path: join(this.directory, SAVEPOINTS_FOLDER, name) };
  }

  /**
   * Writes one subtask's state snapshot into the checkpoint's folder and fsyncs it. Each file is
   * written once: a second write of the same operator, subtask and kind fails (so do operator uids
   * that collide on a case-insensitive file system).
   */
  async writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle> {
    if (typeof operatorUid !== 'string' || operatorUid === '') {
      throw new WeirError('INVALID_STATE_WRITE', 'writeState was given an empty operator uid', { fault: 'internal' });
    }
    if (!Number.isSafeInteger(subtaskIndex) || subtaskIndex < 0) {
      throw new WeirError('INVALID_STATE_WRITE', `writeState was given the subtask index ${subtaskIndex} for operator "${operatorUid}"`, { fault: 'internal' });
    }
    if (kind !== 'keyed' && kind !== 'operator') {
      throw new WeirError('INVALID_STATE_WRITE', `writeState was given the state kind "${String(kind)}"; expected keyed or operator`, { fault: 'internal' });
    }
    const name = stateFileName(operatorUid, subtaskIndex, kind);
    const file = join(location.path, name);
    try {
      await mkdir(location.path, { recursive: true });
      await writeFileDurably(file, bytes, 'wx');
    } catch (error) {
      if (hasCode(error, 'EEXIST')) throw await this.stateFileExists(location, name, operatorUid, error);
      throw ioError('STATE_WRITE_FAILED', `cannot write state file ${file}`, error, true);
    }
    return { path: name, size: bytes.byteLength, sha256: sha256(bytes) };
  }

  /** Reads a state snapshot back, checking its size and SHA-256 against the handle. */
  async readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    const folder = typeof location === 'string' ? resolve(location) : location.path;
    const valid = stateHandleSchema.safeParse(handle);
    if (!valid.success) {
      throw new WeirError('INVALID_STATE_HANDLE', `a state handle for ${folder} is invalid: ${describeSchemaIssues(valid.error)}`, { fault: 'internal' });
    }
    const file = join(folder, handle.path);
    const restoreHint = `the checkpoint in ${folder} is damaged; restore from another checkpoint or savepoint`;
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      if (hasCode(error, 'ENOENT'))
        throw new WeirError('STATE_FILE_MISSING', `state file ${file} is missing`, { fault: 'external', hint: restoreHint, cause: error });
      throw ioError('STATE_READ_FAILED', `cannot read state file ${file}`, error, true);
    }
    if (bytes.byteLength !== handle.size) {
      throw new WeirError('STATE_FILE_CORRUPT', `state file ${file} is corrupt: size mismatch (expected ${handle.size} bytes, found ${bytes.byteLength})`, {
        fault: 'external',
        hint: restoreHint,
      });
    }
    const actual = sha256(bytes);
    if (actual !== handle.sha256) {
      throw new WeirError('STATE_FILE_CORRUPT', `state file ${file} is corrupt: sha256 mismatch (expected ${handle.sha256}, found ${actual})`, {
        fault: 'external',
        hint: restoreHint,
      });
    }
    return bytes;
  }

  /**
   * Records, in `_committed`, that every transaction a savepoint holds has been committed (its
   * sinks acted on its completion). A restore from such a savepoint commits nothing again: by then
   * the transactional ids may serve newer transactions.
   */
  async markCommitted(location: CheckpointLocation): Promise<void> {
    await writeFileDurably(join(location.path, COMMITTED_FILE_NAME), `${new Date().toISOString()}\n`, 'w');
    await syncDirectory(location.path);
  }

  /** Whether a checkpoint or savepoint folder carries the `_committed` record. */
  async isMarkedCommitted(folder: string): Promise<boolean> {
    return pathExists(join(folder, COMMITTED_FILE_NAME));
  }

  /**
   * Completes a checkpoint or savepoint: writes `_metadata.tmp`, fsyncs it, renames it to
   * `_metadata` and fsyncs the folder (and its parents' entries). Before the rename the checkpoint
   * does not exist; after it, it does.
   */
  async commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
    const valid = checkpointMetadataSchema.safeParse(metadata);
    if (!valid.success) {
      throw new WeirError('INVALID_CHECKPOINT_METADATA', `the metadata for ${location.path} is invalid: ${describeSchemaIssues(valid.error)}`, {
        fault: 'internal',
      });
    }
    if (metadata.kind !== location.kind || metadata.checkpointId !== location.checkpointId) {
      throw new WeirError(
        'INVALID_CHECKPOINT_METADATA',
        `the metadata of ${metadata.kind} ${metadata.checkpointId} does not belong in ${location.path} (${location.kind} ${location.checkpointId})`,
        { fault: 'internal' },
      );
    }
    let text: string;
    try {
      text = `${JSON.stringify(valid.data, null, 2)}\n`;
    } catch (error) {
      throw new WeirError('INVALID_CHECKPOINT_METADATA', `the metadata for ${location.path} is not JSON: ${errorMessage(error)}`, {
        fault: 'internal',
        cause: error,
      });
    }
    const final = join(location.path, METADATA_FILE_NAME);
    if (await pathExists(final)) {
      throw new WeirError('CHECKPOINT_ALREADY_COMPLETED', `${final} already exists: ${location.kind} ${location.checkpointId} was completed before`, {
        fault: 'internal',
      });
    }
    const temporary = join(location.path, TEMPORARY_METADATA_FILE_NAME);
    try {
      await mkdir(location.path, { recursive: true });
      await writeFileDurably(temporary, text, 'w');
      await rename(temporary, final);
      await syncDirectory(location.path);
      await syncDirectory(dirname(location.path));
      if (location.kind === 'savepoint') await syncDirectory(dirname(dirname(location.path)));
    } catch (error) {
      throw ioError('CHECKPOINT_COMMIT_FAILED', `cannot write ${final}`, error, true);
    }
  }

  /** Reads a completed checkpoint or savepoint, given its folder or its `_metadata` file. */
  async readMetadata(path: string): Promise<StoredCheckpointMetadata> {
    const absolute = resolve(path);
    let folder: string;
    let file: string;
    try {
      const stats = await stat(absolute);
      if (stats.isDirectory()) {
        folder = absolute;
        file = join(absolute, METADATA_FILE_NAME);
      } else if (basename(absolute) === METADATA_FILE_NAME) {
        folder = dirname(absolute);
        file = absolute;
      } else {
        throw new WeirError('NOT_A_CHECKPOINT', `${absolute} is neither a checkpoint or savepoint folder nor a ${METADATA_FILE_NAME} file`, {
          hint: 'give the path of a chk-<N> folder, a savepoint folder or their _metadata file',
        });
      }
    } catch (error) {
      if (error instanceof WeirError) throw error;
      if (hasCode(error, 'ENOENT', 'ENOTDIR')) {
        throw new WeirError('CHECKPOINT_NOT_FOUND', `no checkpoint or savepoint at ${absolute}: the path does not exist`, {
          hint: 'give the path of a chk-<N> folder or a savepoint folder; `weir checkpoints list` shows the checkpoints of a job',
          cause: error,
        });
      }
      throw ioError('CHECKPOINT_READ_FAILED', `cannot read ${absolute}`, error);
    }
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if (hasCode(error, 'ENOENT')) {
        throw new WeirError('CHECKPOINT_NOT_COMPLETED', `no ${METADATA_FILE_NAME} in ${folder}: it is not a completed checkpoint or savepoint`, {
          hint: 'a checkpoint that was aborted or still running has no _metadata; give a completed one (`weir checkpoints list` shows them)',
          cause: error,
        });
      }
      throw ioError('CHECKPOINT_READ_FAILED', `cannot read ${file}`, error);
    }
    const metadata = parseCheckpointMetadata(text, file);
    const folderId = parseCheckpointFolderName(basename(folder)) ?? parseSavepointFolderName(basename(folder));
    if (folderId !== undefined && folderId !== metadata.checkpointId) {
      throw new WeirError(
        'CHECKPOINT_METADATA_CORRUPT',
        `${file} is corrupt: checkpointId: ${metadata.checkpointId} does not match its folder ${basename(folder)}`,
        {
          fault: 'external',
          hint: 'it was damaged or copied from another folder; restore from another checkpoint or savepoint',
        },
      );
    }
    return { ...metadata, location: { kind: metadata.kind, checkpointId: metadata.checkpointId, path: folder } };
  }

  /**
   * The completed checkpoint or savepoint with the highest id, or undefined when there is none: the
   * snapshot a job resumes from. Savepoints count: their transactions are committed when they are
   * reported, so resuming from an older checkpoint would read and commit those records again.
   * Folders without `_metadata` are skipped (aborted or unfinished). A latest snapshot whose
   * `_metadata` exists but does not read (corrupt, too new) is NOT skipped: restoring an older one
   * silently would replay data and roll back the sinks' state, so this throws, and the hint says
   * which folder to delete to fall back on purpose.
   */
  async latestCompletedCheckpoint(): Promise<StoredCheckpointMetadata | undefined> {
    const folders = [...(await this.checkpointFolders()), ...(await this.savepointFolders())].sort((a, b) => b.checkpointId - a.checkpointId);
    for (const [position, folder] of folders.entries()) {
      if (!(await pathExists(join(folder.path, METADATA_FILE_NAME)))) continue;
      try {
        return await this.readMetadata(folder.path);
      } catch (error) {
        if (!(error instanceof WeirError)) throw error;
        if (error.code === 'CHECKPOINT_NOT_COMPLETED') continue; // discarded meanwhile
        let previous: CheckpointLocation | undefined;
        for (const older of folders.slice(position + 1)) {
          if (await pathExists(join(older.path, METADATA_FILE_NAME))) {
            previous = older;
            break;
          }
        }
        const fallback =
          previous === undefined
            ? `delete ${folder.path} to start without state (there is no older completed checkpoint)`
            : previous.kind === 'checkpoint'
              ? `delete ${folder.path} to fall back to the previous completed checkpoint, ${checkpointFolderName(previous.checkpointId)}`
              : `delete ${folder.path} to fall back to the previous completed savepoint, ${previous.path}`;
        throw new WeirError(error.code, `the latest checkpoint cannot be restored: ${error.message}`, {
          fault: error.fault,
          hint: error.code === 'CHECKPOINT_METADATA_TOO_NEW' ? `use a newer Weir, or ${fallback}` : fallback,
          cause: error,
        });
      }
    }
    return undefined;
  }

  /** The highest id of any `chk-<N>` folder (completed or not) and any savepoint; 0 when there is none. */
  async highestCheckpointId(): Promise<number> {
    let highest = 0;
    for (const folder of await this.checkpointFolders()) highest = Math.max(highest, folder.checkpointId);
    for (const folder of await this.savepointFolders()) highest = Math.max(highest, folder.checkpointId);
    return highest;
  }

  /** Every `chk-<N>` folder (and with `includeSavepoints` every savepoint), ascending by id. */
  async listCheckpoints(options: { includeSavepoints?: boolean } = {}): Promise<CheckpointSummary[]> {
    const locations = [...(await this.checkpointFolders()), ...(options.includeSavepoints === true ? await this.savepointFolders() : [])];
    locations.sort((a, b) => a.checkpointId - b.checkpointId || a.path.localeCompare(b.path));
    const summaries: CheckpointSummary[] = [];
    for (const location of locations) {
      const summary: CheckpointSummary = { checkpointId: location.checkpointId, completed: false, location, sizeBytes: await folderSize(location.path) };
      if (await pathExists(join(location.path, METADATA_FILE_NAME))) {
        try {
          const { location: _, ...metadata } = await this.readMetadata(location.path);
          summary.completed = true;
          summary.metadata = metadata;
        } catch (error) {
          if (!(error instanceof WeirError)) throw error;
          summary.problem = error.message;
        }
      }
      summaries.push(summary);
    }
    return summaries;
  }

  /**
   * Deletes a checkpoint's or savepoint's folder (aborted checkpoints, subsumed ones). `_metadata`
   * goes first, so a crash half-way leaves an incomplete folder, never a completed checkpoint with
   * missing state. Refuses any folder that is not this storage's `chk-<N>` or savepoint folder; a
   * savepoint is deleted only when its own savepoint location is passed.
   */
  async discard(location: CheckpointLocation): Promise<void> {
    const path = resolve(location.path);
    const own =
      location.kind === 'checkpoint'
        ? path === join(this.directory, checkpointFolderName(location.checkpointId))
        : location.kind === 'savepoint' &&
          dirname(path) === join(this.directory, SAVEPOINTS_FOLDER) &&
          parseSavepointFolderName(basename(path)) === location.checkpointId;
    if (!own) {
      throw new WeirError('DISCARD_REFUSED', `refusing to delete ${path}: it is not ${location.kind} ${location.checkpointId}'s folder in ${this.directory}`, {
        fault: 'internal',
      });
    }
    try {
      if (!(await pathExists(path))) return;
      await rm(join(path, METADATA_FILE_NAME), { force: true });
      await syncDirectory(path);
      await rm(path, { recursive: true, force: true });
    } catch (error) {
      throw ioError('CHECKPOINT_DISCARD_FAILED', `cannot delete ${path}`, error, true);
    }
  }

  /**
   * Keeps the `retained` newest completed checkpoints and deletes the older completed ones and every
   * incomplete `chk-<N>` folder below the newest completed one (incomplete folders above it may be
   * in progress and stay). Savepoints are never touched. Returns the deleted ids, ascending.
   */
  async subsume(retained: number): Promise<number[]> {
    if (!Number.isSafeInteger(retained) || retained < 1) {
      throw new WeirError('INVALID_RETAINED_CHECKPOINTS', `checkpointing.retained: ${retained} is not a whole number of at least 1`, {
        hint: 'keep at least one completed checkpoint, for example 1 (the default) or 3',
      });
    }
    const folders = (await this.checkpointFolders()).reverse();
    const kept = new Set<number>();
    let newestCompleted: number | undefined;
    for (const folder of folders) {
      if (kept.size >= retained) break;
      if (!(await pathExists(join(folder.path, METADATA_FILE_NAME)))) continue;
      try {
        await this.readMetadata(folder.path);
      } catch (error) {
        if (error instanceof WeirError && ['CHECKPOINT_METADATA_CORRUPT', 'CHECKPOINT_METADATA_TOO_NEW', 'CHECKPOINT_NOT_COMPLETED'].includes(error.code))
          continue;
        throw error;
      }
      kept.add(folder.checkpointId);
      newestCompleted ??= folder.checkpointId;
    }
    if (newestCompleted === undefined) return [];
    const deleted: number[] = [];
    for (const folder of folders.reverse()) {
      if (folder.checkpointId >= newestCompleted || kept.has(folder.checkpointId)) continue;
      await this.discard(folder);
      deleted.push(folder.checkpointId);
    }
    return deleted;
  }

  /** The `chk-<N>` folders, ascending. */
  private async checkpointFolders(): Promise<CheckpointLocation[]> {
    const folders: CheckpointLocation[] = [];
    for (const name of await this.subfolders(this.directory)) {
      const checkpointId = parseCheckpointFolderName(name);
      if (checkpointId !== undefined) folders.push({ kind: 'checkpoint', checkpointId, path: join(this.directory, name) });
    }
    return folders.sort((a, b) => a.checkpointId - b.checkpointId);
  }

  /** The savepoint folders, ascending. */
  private async savepointFolders(): Promise<CheckpointLocation[]> {
    const parent = join(this.directory, SAVEPOINTS_FOLDER);
    const folders: CheckpointLocation[] = [];
    for (const name of await this.subfolders(parent)) {
      const checkpointId = parseSavepointFolderName(name);
      if (checkpointId !== undefined) folders.push({ kind: 'savepoint', checkpointId, path: join(parent, name) });
    }
    return folders.sort((a, b) => a.checkpointId - b.checkpointId);
  }

  /** The names of the folders in `path`; none when it does not exist. */
  private async subfolders(path: string): Promise<string[]> {
    try {
      const entries = await readdir(path, { withFileTypes: true });
      return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    } catch (error) {
      if (hasCode(error, 'ENOENT')) return [];
      if (hasCode(error, 'ENOTDIR') && path === this.directory) throw this.notAFolder(error);
      throw ioError('CHECKPOINT_STORAGE_FAILED', `cannot list ${path}`, error, true);
    }
  }

  private async stateFileExists(location: CheckpointLocation, name: string, operatorUid: string, cause: unknown): Promise<WeirError> {
    const names = await readdir(location.path).catch(() => [] as string[]);
    const twin = names.find((existing) => existing !== name && existing.toLowerCase() === name.toLowerCase());
    if (!names.includes(name) || twin !== undefined) {
      return new WeirError(
        'OPERATOR_UID_COLLISION',
        `state file ${join(location.path, name)} collides with ${twin ?? 'another file'}: operator uid "${operatorUid}" differs from another only in letter case, which this file system does not tell apart`,
        { hint: 'give the operators uids that differ in more than letter case (`.uid(...)`)', cause },
      );
    }
    return new WeirError('STATE_FILE_EXISTS', `state file ${join(location.path, name)} already exists: the same subtask's state was written twice`, {
      fault: 'internal',
      cause,
    });
  }

  private notAFolder(cause?: unknown): WeirError {
    return new WeirError('CHECKPOINT_STORAGE_NOT_A_FOLDER', `${SETTING}: ${this.directory} is not a folder (a file is in the way)`, {
      hint: `point ${SETTING} at a folder, or move the file away`,
      cause,
    });
  }

  private notWritable(cause: unknown): WeirError {
    return new WeirError('CHECKPOINT_STORAGE_NOT_WRITABLE', `${SETTING}: cannot write to ${this.directory} (${errorMessage(cause)})`, {
      hint: `point ${SETTING} at a folder this user may write, or fix its permissions`,
      cause,
    });
  }
}

function assertCheckpointId(checkpointId: number): void {
  if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
    throw new WeirError('INVALID_CHECKPOINT_ID', `${checkpointId} is not a checkpoint id (a whole number of at least 1)`, { fault: 'internal' });
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (hasCode(error, 'ENOENT', 'ENOTDIR')) return false;
    throw ioError('CHECKPOINT_STORAGE_FAILED', `cannot read ${path}`, error, true);
  }
}

/** The sizes of all files under `path` together; 0 when it vanished meanwhile. */
async function folderSize(path: string): Promise<number> {
  let total = 0;
  try {
    for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile()) continue;
      total += (await lstat(join(entry.parentPath, entry.name)).catch(() => ({ size: 0 }))).size;
    }
  } catch (error) {
    if (!hasCode(error, 'ENOENT')) throw ioError('CHECKPOINT_STORAGE_FAILED', `cannot list ${path}`, error, true);
  }
  return total;
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && codes.includes((error as NodeJS.ErrnoException).code ?? '');
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A disk problem: names the path and what the operating system said. */
function ioError(code: string, what: string, cause: unknown, retriable = false): WeirError {
  const full = hasCode(cause, 'ENOSPC', 'EDQUOT');
  return new WeirError(code, `${what}: ${errorMessage(cause)}`, {
    fault: 'external',
    retriable,
    hint: full ? 'the disk is full: free space or point checkpointing.storage at a larger disk' : `check that ${SETTING} is on a healthy, writable disk`,
    cause,
  });
}
