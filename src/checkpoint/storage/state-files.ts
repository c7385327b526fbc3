import { createHash, type Hash } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { WeirError } from '../../core/errors/weir-error.ts';
import { releaseBytes } from '../../core/heap/release-bytes.ts';
import { checkpointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import { describeSchemaIssues, type StateHandle, stateHandleSchema } from './checkpoint-metadata.ts';
import type { StateFileWriter } from './checkpoint-storage.ts';
import { writeFileDurably } from './durable-file.ts';
import { type StateKind, stateFileName } from './state-file-name.ts';
import { hasCode, storageIoError } from './storage-errors.ts';

/**
 * Writes one subtask's state snapshot into a checkpoint's folder and fsyncs it. Each file is
 * written once: a second write of the same operator, subtask and kind fails (so do operator uids
 * that collide on a case-insensitive file system).
 */
export async function writeStateFile(
  location: CheckpointLocation,
  operatorUid: string,
  subtaskIndex: number,
  kind: StateKind,
  bytes: Uint8Array,
): Promise<StateHandle> {
  const name = checkStateWrite(operatorUid, subtaskIndex, kind);
  const file = join(location.path, name);
  try {
    await mkdir(location.path, { recursive: true });
    await writeFileDurably(file, bytes, 'wx');
  } catch (error) {
    if (hasCode(error, 'EEXIST')) throw await stateFileExists(location, name, operatorUid, error);
    throw storageIoError('STATE_WRITE_FAILED', `cannot write state file ${file}`, error, true);
  }
  return { path: name, size: bytes.byteLength, sha256: await sha256InSlices(bytes) };
}

/**
 * Opens one subtask's state file to write piece by piece (a keyed snapshot as it is produced):
 * created once (`wx`, as {@link writeStateFile}), hashed as it is written, fsynced by `finish`;
 * `abort` deletes it. The pieces given to `write` are freed once written (releaseBytes).
 */
export async function openStateFile(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind): Promise<StateFileWriter> {
  const name = checkStateWrite(operatorUid, subtaskIndex, kind);
  const file = join(location.path, name);
  let handle: FileHandle;
  try {
    await mkdir(location.path, { recursive: true });
    handle = await open(file, 'wx');
  } catch (error) {
    if (hasCode(error, 'EEXIST')) throw await stateFileExists(location, name, operatorUid, error);
    throw storageIoError('STATE_WRITE_FAILED', `cannot write state file ${file}`, error, true);
  }
  const hash = createHash('sha256');
  let size = 0;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return {
    write: async (pieces) => {
      try {
        const left = pieces.filter((piece) => piece.byteLength > 0);
        while (left.length > 0) {
          const { bytesWritten } = await handle.writev(left);
          // A short write (rare on a file) goes on from where it stopped.
          let skip = bytesWritten;
          while (left.length > 0 && skip >= (left[0] as Uint8Array).byteLength) skip -= (left.shift() as Uint8Array).byteLength;
          if (skip > 0) left[0] = (left[0] as Uint8Array).subarray(skip);
        }
      } catch (error) {
        throw storageIoError('STATE_WRITE_FAILED', `cannot write state file ${file}`, error, true);
      }
      size += await hashInSlices(hash, pieces);
      for (const piece of pieces) releaseBytes(piece); // written and hashed: its memory goes now, not at a later collection
    },
    finish: async () => {
      try {
        await handle.sync();
        await close();
      } catch (error) {
        throw storageIoError('STATE_WRITE_FAILED', `cannot write state file ${file}`, error, true);
      }
      return { path: name, size, sha256: hash.digest('hex') };
    },
    abort: async () => {
      await close().catch(() => {});
      await rm(file, { force: true }).catch(() => {});
    },
  };
}

/** Checks what writeState was given; returns the file's name. */
function checkStateWrite(operatorUid: string, subtaskIndex: number, kind: StateKind): string {
  if (typeof operatorUid !== 'string' || operatorUid === '') {
    throw new WeirError('INVALID_STATE_WRITE', 'writeState was given an empty operator uid', { fault: 'internal' });
  }
  if (!Number.isSafeInteger(subtaskIndex) || subtaskIndex < 0) {
    throw new WeirError('INVALID_STATE_WRITE', `writeState was given the subtask index ${subtaskIndex} for operator "${operatorUid}"`, { fault: 'internal' });
  }
  if (kind !== 'keyed' && kind !== 'keyed-base' && kind !== 'operator') {
    throw new WeirError('INVALID_STATE_WRITE', `writeState was given the state kind "${String(kind)}"; expected keyed, keyed-base or operator`, {
      fault: 'internal',
    });
  }
  return stateFileName(operatorUid, subtaskIndex, kind);
}

/** Where a handle's state file is (an incremental checkpoint's shared file is in an earlier checkpoint's folder), and the hint for a damaged one. */
function stateFileOf(location: CheckpointLocation | string, handle: StateHandle): { file: string; hint: string } {
  const folder = typeof location === 'string' ? resolve(location) : location.path;
  const valid = stateHandleSchema.safeParse(handle);
  if (!valid.success) {
    throw new WeirError('INVALID_STATE_HANDLE', `a state handle for ${folder} is invalid: ${describeSchemaIssues(valid.error)}`, { fault: 'internal' });
  }
  // A file an incremental checkpoint shares with an earlier one is in that one's folder, beside this one.
  const file = join(handle.checkpoint === undefined ? folder : join(dirname(folder), checkpointFolderName(handle.checkpoint)), handle.path);
  return { file, hint: `the checkpoint in ${folder} is damaged; restore from another checkpoint or savepoint` };
}

/** Reads a state snapshot back, checking its size and SHA-256 against the handle. */
export async function readStateFile(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
  const { file, hint } = stateFileOf(location, handle);
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw readError(file, hint, error);
  }
  checkStateFile(file, hint, handle, bytes.byteLength, sha256(bytes));
  return bytes;
}

/** Bytes of a piece {@link readStateFilePieces} reads. */
const READ_PIECE_BYTES = 4 * 1024 * 1024;

/**
 * Reads a state file a piece at a time (4 MiB, each its own buffer the caller owns), hashing as it
 * goes; after the last piece its size and SHA-256 are checked against the handle (the iteration
 * throws when they do not match: use nothing before it ended).
 */
export async function* readStateFilePieces(location: CheckpointLocation | string, handle: StateHandle): AsyncGenerator<Uint8Array> {
  const { file, hint } = stateFileOf(location, handle);
  let fd: FileHandle;
  try {
    fd = await open(file, 'r');
  } catch (error) {
    throw readError(file, hint, error);
  }
  const hash = createHash('sha256');
  let size = 0;
  try {
    for (;;) {
      const piece = Buffer.allocUnsafeSlow(READ_PIECE_BYTES);
      let read: number;
      try {
        read = (await fd.read(piece, 0, READ_PIECE_BYTES, size)).bytesRead;
      } catch (error) {
        throw readError(file, hint, error);
      }
      if (read === 0) break;
      const bytes = read === READ_PIECE_BYTES ? piece : piece.subarray(0, read);
      hash.update(bytes);
      size += read;
      if (size > handle.size) break;
      yield bytes;
    }
  } finally {
    await fd.close();
  }
  checkStateFile(file, hint, handle, size, hash.digest('hex'));
}

function readError(file: string, hint: string, error: unknown): WeirError {
  if (hasCode(error, 'ENOENT')) return new WeirError('STATE_FILE_MISSING', `state file ${file} is missing`, { fault: 'external', hint, cause: error });
  return storageIoError('STATE_READ_FAILED', `cannot read state file ${file}`, error, true);
}

function checkStateFile(file: string, hint: string, handle: StateHandle, size: number, actual: string): void {
  if (size !== handle.size) {
    throw new WeirError('STATE_FILE_CORRUPT', `state file ${file} is corrupt: size mismatch (expected ${handle.size} bytes, found ${size})`, {
      fault: 'external',
      hint,
    });
  }
  if (actual !== handle.sha256) {
    throw new WeirError('STATE_FILE_CORRUPT', `state file ${file} is corrupt: sha256 mismatch (expected ${handle.sha256}, found ${actual})`, {
      fault: 'external',
      hint,
    });
  }
}

async function stateFileExists(location: CheckpointLocation, name: string, operatorUid: string, cause: unknown): Promise<WeirError> {
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

/** The SHA-256 of some bytes in hex, as state handles name it. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Bytes hashed at a time by {@link sha256InSlices} and {@link hashInSlices}: a few milliseconds of the thread. */
const HASH_SLICE_BYTES = 4 * 1024 * 1024;

/**
 * Adds `pieces` to `hash` a few MB per turn of the event loop (the task goes on in between; a piece
 * larger than that is hashed in slices of its own); returns their bytes.
 */
export async function hashInSlices(hash: Hash, pieces: readonly Uint8Array[]): Promise<number> {
  let bytes = 0;
  let sinceTurn = 0;
  for (const piece of pieces) {
    for (let start = 0; start < piece.byteLength; start += HASH_SLICE_BYTES) {
      const slice = start === 0 && piece.byteLength <= HASH_SLICE_BYTES ? piece : piece.subarray(start, start + HASH_SLICE_BYTES);
      hash.update(slice);
      sinceTurn += slice.byteLength;
      if (sinceTurn >= HASH_SLICE_BYTES) {
        sinceTurn = 0;
        await nextTurn();
      }
    }
    bytes += piece.byteLength;
  }
  return bytes;
}

/**
 * The SHA-256 of a state file written while its task runs (a checkpoint's asynchronous part):
 * hashed a few MB at a time, one turn of the event loop each, so the task's records go on in
 * between (a 200 MB file hashed at once stood the task still for about 120 ms).
 */
export async function sha256InSlices(bytes: Uint8Array): Promise<string> {
  if (bytes.byteLength <= HASH_SLICE_BYTES) return sha256(bytes);
  const hash = createHash('sha256');
  await hashInSlices(hash, [bytes]);
  return hash.digest('hex');
}
