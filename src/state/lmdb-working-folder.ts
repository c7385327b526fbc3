import { accessSync, constants, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { WeirError } from '../core/errors/weir-error.ts';

/**
 * The disk backend's working folder (`stateDir/<job>/<uid>/<subtask>`): each store's own
 * subfolder and the files restores stream bases into, named after the process and thread that
 * use them, so what a crash left is found and deleted, never what is in use.
 */

let nextInstance = 0;
/** The working folders of this thread's open stores, and the files restores stream bases into. */
const openDirs = new Set<string>();

/**
 * A file in the working folder `folder` a restore streams a base's lmdb file into, before the store
 * that opens it exists (LmdbStoreBase's `file.path`): named after this process, so one a crash left
 * goes with the next store made there, and kept from that cleanup while it is in use. The caller
 * deletes it ({@link releaseRestoreFile}) when the store is not made.
 */
export function reserveRestoreFile(folder: string): string {
  try {
    mkdirSync(folder, { recursive: true });
  } catch (error) {
    throw stateDirError(folder, error);
  }
  const path = join(folder, `${process.pid}-${threadId}-${nextInstance++}.restore`);
  openDirs.add(path);
  return path;
}

/** Deletes a file {@link reserveRestoreFile} gave (best effort). */
export function releaseRestoreFile(path: string): void {
  openDirs.delete(path);
  rmSync(path, { force: true });
}

/**
 * A new store's own folder in `folder` (`<pid>-<thread>-<n>`), made empty, after deleting what
 * processes no longer running (and earlier attempts in this one) left there; kept from that
 * cleanup until {@link releaseStoreFolder}.
 */
export function newStoreFolder(folder: string): string {
  const dir = join(folder, `${process.pid}-${threadId}-${nextInstance++}`);
  prepareFolder(folder, dir);
  openDirs.add(dir);
  return dir;
}

/** Deletes a store's folder ({@link newStoreFolder}) once lmdb closed it. */
export function releaseStoreFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  openDirs.delete(dir);
}

/** A restore file ({@link reserveRestoreFile}) was moved into a store's folder: it is that store's now. */
export function restoreFileMoved(path: string): void {
  openDirs.delete(path);
}

/**
 * Makes the instance's folder `dir` in `folder`, first deleting what processes no longer running
 * left in `folder` (a SIGKILL leaves its lmdb files). An unusable folder is the user's
 * configuration to fix.
 */
function prepareFolder(folder: string, dir: string): void {
  try {
    mkdirSync(folder, { recursive: true });
    for (const entry of readdirSync(folder)) {
      const pid = Number(entry.split('-')[0]);
      const path = join(folder, entry);
      // Left by a process that is gone (SIGKILL), or by an earlier attempt of this task in this
      // process (a restart terminates the old attempt's workers before it starts the new one, so
      // their backends were never disposed); never a backend open in this thread.
      const stale = pid === process.pid ? !openDirs.has(path) : Number.isInteger(pid) && pid > 0 && !isRunning(pid);
      if (stale) rmSync(path, { recursive: true, force: true });
    }
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw stateDirError(folder, error);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function stateDirError(dir: string, error: unknown): WeirError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOSPC' ? 'the disk is full' : code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? 'it is not writable' : (error as Error).message;
  return new WeirError('INVALID_CONFIG', `stateDir: the disk state backend cannot use its working folder ${dir}: ${why}`, {
    hint: 'set stateDir to a writable folder on a local disk with room for the state (or run the job with stateBackend: heap)',
    cause: error,
  });
}
