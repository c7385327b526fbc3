import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, lstat, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { WeirError } from '../../core/errors/weir-error.ts';
import {
  assertCheckpointId,
  checkpointFolderName,
  parseCheckpointFolderName,
  parseSavepointFolderName,
  SAVEPOINTS_FOLDER,
  savepointFolderName,
} from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import { METADATA_FILE_NAME } from './checkpoint-metadata.ts';
import { syncDirectory } from './durable-file.ts';
import { errorMessage, hasCode, STORAGE_SETTING, storageIoError } from './storage-errors.ts';

/**
 * The folders of a file-system checkpoint storage (its storage access): the job's checkpoint
 * directory, the `chk-<N>` and `savepoints/savepoint-<N>-<hex>` folders in it, listing and
 * deleting them. What goes inside a folder is the state files' and the metadata's business.
 */
export class CheckpointDirectory {
  /** Absolute. */
  readonly path: string;

  constructor(directory: string) {
    if (typeof directory !== 'string' || directory.trim() === '') {
      throw new WeirError('INVALID_CHECKPOINT_STORAGE', `${STORAGE_SETTING} is empty`, {
        hint: 'give a folder for this job’s checkpoints, for example .weir/checkpoints/<job name>',
      });
    }
    this.path = resolve(directory);
  }

  /** Creates the folder (and its parents) and checks it can be written. */
  async initialize(): Promise<void> {
    try {
      await mkdir(this.path, { recursive: true });
    } catch (error) {
      if (hasCode(error, 'EEXIST', 'ENOTDIR')) throw this.#notAFolder(error);
      if (hasCode(error, 'EACCES', 'EPERM', 'EROFS')) throw this.#notWritable(error);
      throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot create the checkpoint folder ${this.path}`, error);
    }
    const stats = await stat(this.path).catch((error: unknown) => {
      throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot read the checkpoint folder ${this.path}`, error);
    });
    if (!stats.isDirectory()) throw this.#notAFolder();
    try {
      await access(this.path, constants.W_OK | constants.X_OK);
    } catch (error) {
      throw this.#notWritable(error);
    }
  }

  /** The folder of checkpoint `checkpointId` (`chk-<N>`); nothing is created yet. */
  checkpointLocation(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    return { kind: 'checkpoint', checkpointId, path: join(this.path, checkpointFolderName(checkpointId)) };
  }

  /** A new folder for a savepoint taken as checkpoint `checkpointId` (`savepoints/savepoint-<N>-<random hex>`). */
  savepointLocation(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    const name = savepointFolderName(checkpointId, randomBytes(6).toString('hex'));
    return { kind: 'savepoint', checkpointId, path: join(this.path, SAVEPOINTS_FOLDER, name) };
  }

  /** The `chk-<N>` folders or the savepoint folders, ascending by id. */
  async listLocations(kind: CheckpointLocation['kind']): Promise<CheckpointLocation[]> {
    const parent = kind === 'checkpoint' ? this.path : join(this.path, SAVEPOINTS_FOLDER);
    const parse = kind === 'checkpoint' ? parseCheckpointFolderName : parseSavepointFolderName;
    const folders: CheckpointLocation[] = [];
    for (const name of await this.#subfolders(parent)) {
      const checkpointId = parse(name);
      if (checkpointId !== undefined) folders.push({ kind, checkpointId, path: join(parent, name) });
    }
    return folders.sort((a, b) => a.checkpointId - b.checkpointId);
  }

  async hasMetadata(location: CheckpointLocation): Promise<boolean> {
    return pathExists(join(location.path, METADATA_FILE_NAME));
  }

  /** The sizes of all files under a folder together; 0 when it vanished meanwhile. */
  async sizeOf(location: CheckpointLocation): Promise<number> {
    let total = 0;
    try {
      for (const entry of await readdir(location.path, { withFileTypes: true, recursive: true })) {
        if (!entry.isFile()) continue;
        total += (await lstat(join(entry.parentPath, entry.name)).catch(() => ({ size: 0 }))).size;
      }
    } catch (error) {
      if (!hasCode(error, 'ENOENT')) throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot list ${location.path}`, error, true);
    }
    return total;
  }

  /**
   * Deletes a checkpoint's or savepoint's folder (aborted checkpoints, subsumed ones). `_metadata`
   * goes first, so a crash half-way leaves an incomplete folder, never a completed checkpoint with
   * missing state. Refuses any folder that is not this directory's `chk-<N>` or savepoint folder;
   * a savepoint is deleted only when its own savepoint location is passed.
   */
  async discard(location: CheckpointLocation): Promise<void> {
    const path = this.#ownPath(location);
    try {
      if (!(await pathExists(path))) return;
      await rm(join(path, METADATA_FILE_NAME), { force: true });
      await syncDirectory(path);
      await rm(path, { recursive: true, force: true });
    } catch (error) {
      throw storageIoError('CHECKPOINT_DISCARD_FAILED', `cannot delete ${path}`, error, true);
    }
  }

  /** Deletes a checkpoint's `_metadata` only (durably): its state files stay for the checkpoints that name them. */
  async discardMetadata(location: CheckpointLocation): Promise<void> {
    const path = this.#ownPath(location);
    try {
      if (!(await pathExists(join(path, METADATA_FILE_NAME)))) return;
      await rm(join(path, METADATA_FILE_NAME), { force: true });
      await syncDirectory(path);
    } catch (error) {
      throw storageIoError('CHECKPOINT_DISCARD_FAILED', `cannot delete ${join(path, METADATA_FILE_NAME)}`, error, true);
    }
  }

  /** The folder of a location of this directory; refuses anything else. */
  #ownPath(location: CheckpointLocation): string {
    const path = resolve(location.path);
    const own =
      location.kind === 'checkpoint'
        ? path === join(this.path, checkpointFolderName(location.checkpointId))
        : location.kind === 'savepoint' &&
          dirname(path) === join(this.path, SAVEPOINTS_FOLDER) &&
          parseSavepointFolderName(basename(path)) === location.checkpointId;
    if (!own) {
      throw new WeirError('DISCARD_REFUSED', `refusing to delete ${path}: it is not ${location.kind} ${location.checkpointId}'s folder in ${this.path}`, {
        fault: 'internal',
      });
    }
    return path;
  }

  /** The names of the folders in `path`; none when it does not exist. */
  /** The other folders in this folder's parent, as absolute paths. */
  async neighbours(): Promise<string[]> {
    const parent = dirname(this.path);
    if (parent === this.path) return [];
    const own = basename(this.path);
    return (await this.#subfolders(parent)).filter((name) => name !== own).map((name) => join(parent, name));
  }

  async #subfolders(path: string): Promise<string[]> {
    try {
      const entries = await readdir(path, { withFileTypes: true });
      return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    } catch (error) {
      if (hasCode(error, 'ENOENT')) return [];
      if (hasCode(error, 'ENOTDIR') && path === this.path) throw this.#notAFolder(error);
      throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot list ${path}`, error, true);
    }
  }

  #notAFolder(cause?: unknown): WeirError {
    return new WeirError('CHECKPOINT_STORAGE_NOT_A_FOLDER', `${STORAGE_SETTING}: ${this.path} is not a folder (a file is in the way)`, {
      hint: `point ${STORAGE_SETTING} at a folder, or move the file away`,
      cause,
    });
  }

  #notWritable(cause: unknown): WeirError {
    return new WeirError('CHECKPOINT_STORAGE_NOT_WRITABLE', `${STORAGE_SETTING}: cannot write to ${this.path} (${errorMessage(cause)})`, {
      hint: `point ${STORAGE_SETTING} at a folder this user may write, or fix its permissions`,
      cause,
    });
  }
}

/** Whether a path exists (a broken disk is an error, not a no). */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (hasCode(error, 'ENOENT', 'ENOTDIR')) return false;
    throw storageIoError('CHECKPOINT_STORAGE_FAILED', `cannot read ${path}`, error, true);
  }
}
