import { type FileHandle, open } from 'node:fs/promises';
import { WeirError } from '../core/errors/weir-error.ts';
import { isLmdbBase, type LmdbBase, type LmdbBaseHeader, type LmdbBaseLayout, readLmdbBaseLayout } from './lmdb-base-format.ts';

/** The most bytes a base's header may take before lmdb's file starts (it names states and value shapes: kilobytes). */
const MAX_HEADER_BYTES = 64 * 1024 * 1024;

/**
 * A keyed full snapshot read a piece at a time (a state file as the storage streams it, checked at
 * its end): a canonical snapshot or a base a restore converts comes back whole (`bytes`); a base
 * that `adopt` takes (a disk backend of its key groups: `adopt` gives a file from
 * reserveRestoreFile) has lmdb's file written there as it arrives, never held in memory, and comes
 * back as a base naming that file, its correction in memory. Nothing is returned before the last
 * piece was read (the storage's size and SHA-256 check passed).
 */
export async function readKeyedFullSnapshot(
  pieces: AsyncIterable<Uint8Array>,
  source: string,
  adopt: (header: LmdbBaseHeader) => string | undefined,
): Promise<{ bytes: Uint8Array } | { base: LmdbBase }> {
  const iterator = pieces[Symbol.asyncIterator]();
  try {
    return await readFrom(iterator, source, adopt);
  } finally {
    // Left early (a bad header, a failed write): the storage's reader closes its file.
    await iterator.return?.();
  }
}

async function readFrom(
  iterator: AsyncIterator<Uint8Array>,
  source: string,
  adopt: (header: LmdbBaseHeader) => string | undefined,
): Promise<{ bytes: Uint8Array } | { base: LmdbBase }> {
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  let layout: LmdbBaseLayout | undefined;
  let ended = false;
  // The header: pieces until it reads (one piece, in practice), or it is not a base.
  while (layout === undefined) {
    const next = await iterator.next();
    if (next.done === true) {
      ended = true;
      break;
    }
    held.push(next.value);
    heldBytes += next.value.byteLength;
    const start = held.length === 1 ? (held[0] as Uint8Array) : Buffer.concat(held, heldBytes);
    if (start.byteLength >= 4 && !isLmdbBase(start)) break;
    try {
      layout = readLmdbBaseLayout(start, source);
    } catch (error) {
      if (heldBytes > MAX_HEADER_BYTES) throw error;
    }
  }
  const path = layout === undefined ? undefined : adopt(layout.header);
  if (layout === undefined || path === undefined) {
    if (!ended) for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) held.push(next.value);
    const bytes = held.length === 1 ? (held[0] as Uint8Array) : Buffer.concat(held);
    if (layout === undefined && isLmdbBase(bytes)) readLmdbBaseLayout(bytes, source); // a base that ends inside its header: says so
    return { bytes };
  }
  return { base: await streamBase(layout, held, iterator, path, source) };
}

/** Writes lmdb's file of a base into `path` as its pieces come (`held`: those read already), keeping the correction. */
async function streamBase(layout: LmdbBaseLayout, held: Uint8Array[], iterator: AsyncIterator<Uint8Array>, path: string, source: string): Promise<LmdbBase> {
  const { fileStart, fileLength } = layout;
  const fileEnd = fileStart + fileLength;
  const correction: Uint8Array[] = [];
  let position = 0;
  let file: FileHandle | undefined;
  try {
    file = await open(path, 'w');
    const take = async (piece: Uint8Array) => {
      const start = position;
      const end = position + piece.byteLength;
      position = end;
      const from = Math.max(start, fileStart);
      const to = Math.min(end, fileEnd);
      if (to > from) await (file as FileHandle).write(piece.subarray(from - start, to - start));
      if (end > fileEnd) correction.push(piece.subarray(Math.max(0, fileEnd - start)));
    };
    for (const piece of held) await take(piece);
    held.length = 0;
    // The next piece is read (and hashed) while this one is written. Its failure is seen when it is
    // awaited, or not at all when a write failed first (marked handled at once, not left unhandled).
    const readAhead = () => {
      const next = iterator.next();
      next.catch(() => {});
      return next;
    };
    let ahead = readAhead();
    for (let next = await ahead; next.done !== true; next = await ahead) {
      ahead = readAhead();
      await take(next.value);
    }
  } catch (error) {
    await file?.close().catch(() => {});
    throw error instanceof WeirError
      ? error
      : new WeirError('STATE_WRITE_FAILED', `${source}: cannot write its lmdb file to ${path}: ${(error as Error).message}`, {
          fault: 'external',
          hint: 'check the free space and permissions of stateDir',
          cause: error,
        });
  }
  await file.close();
  if (position < fileEnd)
    throw new WeirError('STATE_SNAPSHOT_CORRUPT', `${source} is corrupt: its lmdb file (${fileLength} bytes) is not inside it`, {
      fault: 'external',
      hint: 'restore from another checkpoint or savepoint',
    });
  return { ...layout.header, file: { path }, correction: correction.length === 1 ? (correction[0] as Uint8Array) : Buffer.concat(correction) };
}
