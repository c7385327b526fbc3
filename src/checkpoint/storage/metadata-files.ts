import { link, mkdir, readFile, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { WeirError } from '../../core/errors/weir-error.ts';
import { pathExists } from './checkpoint-directory.ts';
import { parseCheckpointFolderName, parseSavepointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import { type CheckpointMetadata, checkpointMetadataSchema, describeSchemaIssues, METADATA_FILE_NAME, parseCheckpointMetadata } from './checkpoint-metadata.ts';
import type { StoredCheckpointMetadata } from './checkpoint-storage.ts';
import { syncDirectory, writeFileDurably } from './durable-file.ts';
import { errorMessage, hasCode, storageIoError } from './storage-errors.ts';
import { fencedWrite, type StorageLock } from './storage-lock.ts';

/** Written into a savepoint once its transactions are committed. */
export const COMMITTED_FILE_NAME = '_committed';

const TEMPORARY_METADATA_FILE_NAME = `${METADATA_FILE_NAME}.tmp`;

/** The metadata of a checkpoint or savepoint as the text every storage writes, checked against its schema and its location. */
export function metadataText(location: CheckpointLocation, metadata: CheckpointMetadata): string {
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
  try {
    return `${JSON.stringify(valid.data, null, 2)}\n`;
  } catch (error) {
    throw new WeirError('INVALID_CHECKPOINT_METADATA', `the metadata for ${location.path} is not JSON: ${errorMessage(error)}`, {
      fault: 'internal',
      cause: error,
    });
  }
}

/** Parses a `_metadata` file's text read from `folder` (named by its last path segment), checking its id matches the folder's. */
export function storedMetadata(text: string, file: string, folder: string, folderName: string): StoredCheckpointMetadata {
  const metadata = parseCheckpointMetadata(text, file);
  const folderId = parseCheckpointFolderName(folderName) ?? parseSavepointFolderName(folderName);
  if (folderId !== undefined && folderId !== metadata.checkpointId) {
    throw new WeirError('CHECKPOINT_METADATA_CORRUPT', `${file} is corrupt: checkpointId: ${metadata.checkpointId} does not match its folder ${folderName}`, {
      fault: 'external',
      hint: 'it was damaged or copied from another folder; restore from another checkpoint or savepoint',
    });
  }
  return { ...metadata, location: { kind: metadata.kind, checkpointId: metadata.checkpointId, path: folder } };
}

/**
 * Completes a checkpoint or savepoint: writes `_metadata.tmp`, fsyncs it, links it to `_metadata`
 * (which fails when `_metadata` exists: never an overwrite) and fsyncs the folder (and its
 * parents' entries). Before the link the checkpoint does not exist; after it, it does. With the
 * storage's `lock`, the link is fenced by it ({@link fencedWrite}): a process that lost the lock
 * is refused (CHECKPOINT_STORAGE_LOCK_LOST), and one that lost it during the link takes its
 * `_metadata` back.
 */
export async function writeMetadataFile(location: CheckpointLocation, metadata: CheckpointMetadata, lock?: StorageLock): Promise<void> {
  const text = metadataText(location, metadata);
  const final = join(location.path, METADATA_FILE_NAME);
  const alreadyCompleted = () =>
    new WeirError('CHECKPOINT_ALREADY_COMPLETED', `${final} already exists: ${location.kind} ${location.checkpointId} was completed before`, {
      fault: 'internal',
    });
  if (await pathExists(final)) throw alreadyCompleted();
  const temporary = join(location.path, TEMPORARY_METADATA_FILE_NAME);
  const sync = async () => {
    await syncDirectory(location.path);
    await syncDirectory(dirname(location.path));
    if (location.kind === 'savepoint') await syncDirectory(dirname(dirname(location.path)));
  };
  try {
    await mkdir(location.path, { recursive: true });
    await writeFileDurably(temporary, text, 'w');
    await fencedWrite(
      lock,
      async () => {
        try {
          await link(temporary, final);
        } catch (error) {
          if (hasCode(error, 'EEXIST')) throw alreadyCompleted();
          throw error;
        }
        await unlink(temporary);
        await sync();
      },
      async () => {
        await unlink(final);
        await syncDirectory(location.path);
      },
    );
  } catch (error) {
    await unlink(temporary).catch(() => {});
    if (error instanceof WeirError) throw error;
    throw storageIoError('CHECKPOINT_COMMIT_FAILED', `cannot write ${final}`, error, true);
  }
}

/** Reads a completed checkpoint or savepoint, given its folder or its `_metadata` file. */
export async function readMetadataFile(path: string): Promise<StoredCheckpointMetadata> {
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
    throw storageIoError('CHECKPOINT_READ_FAILED', `cannot read ${absolute}`, error);
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
    throw storageIoError('CHECKPOINT_READ_FAILED', `cannot read ${file}`, error);
  }
  return storedMetadata(text, file, folder, basename(folder));
}

/**
 * Records, in `_committed`, that every transaction a savepoint holds has been committed (its
 * sinks acted on its completion). A restore from such a savepoint commits nothing again: by then
 * the transactional ids may serve newer transactions.
 */
export async function writeCommittedMarker(location: CheckpointLocation, lock?: StorageLock): Promise<void> {
  await lock?.verify();
  await writeFileDurably(join(location.path, COMMITTED_FILE_NAME), `${new Date().toISOString()}\n`, 'w');
  await syncDirectory(location.path);
}

/** Whether a checkpoint or savepoint folder carries the `_committed` record. */
export async function hasCommittedMarker(folder: string): Promise<boolean> {
  return pathExists(join(folder, COMMITTED_FILE_NAME));
}
