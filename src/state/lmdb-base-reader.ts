import { type FileHandle, open } from 'node:fs/promises';
import { WeirError } from '../core/errors/weir-error.ts';
import { isLmdbBase, type LmdbBase, type LmdbBaseHeader, type LmdbBaseLayout, readLmdbBaseLayout } from './lmdb-base-format.ts';
import { corruptChunks, decompressZstdChunk, readZstdChunkHeader, ZSTD_CHUNK_HEADER_BYTES } from './zstd-chunks.ts';

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
  const correction: Uint8Array[] = [];
  let file: FileHandle | undefined;
  let position = 0;
  let output: FileOutput | undefined;
  try {
    file = await open(path, 'w');
    output = layout.compressed ? new CompressedFileOutput(file, fileLength, source) : new RawFileOutput(file, fileLength);
    const into = output;
    const take = async (piece: Uint8Array) => {
      const start = position;
      position += piece.byteLength;
      if (position <= fileStart) return;
      let rest = piece.subarray(Math.max(0, fileStart - start));
      if (!into.full) rest = await into.take(rest);
      if (rest.byteLength > 0) correction.push(rest);
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
    await output.written();
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
  if (!output.full)
    throw new WeirError('STATE_SNAPSHOT_CORRUPT', `${source} is corrupt: its lmdb file (${fileLength} bytes) is not inside it`, {
      fault: 'external',
      hint: 'restore from another checkpoint or savepoint',
    });
  return { ...layout.header, file: { path }, correction: correction.length === 1 ? (correction[0] as Uint8Array) : Buffer.concat(correction) };
}

/** Where the bytes of lmdb's file go as they come: a local file. */
interface FileOutput {
  /** The whole file was written: the bytes left are the correction's. */
  readonly full: boolean;
  /** Takes the file's bytes from the start of `bytes`; returns the bytes past the file's end. */
  take(bytes: Uint8Array): Promise<Uint8Array>;
  /** Settles once every byte taken is in the file (throws a write's failure). */
  written(): Promise<void>;
}

/** Version 1: lmdb's file as it is. */
class RawFileOutput implements FileOutput {
  readonly #file: FileHandle;
  #left: number;

  constructor(file: FileHandle, length: number) {
    this.#file = file;
    this.#left = length;
  }

  get full(): boolean {
    return this.#left === 0;
  }

  async take(bytes: Uint8Array): Promise<Uint8Array> {
    const part = bytes.subarray(0, Math.min(this.#left, bytes.byteLength));
    if (part.byteLength > 0) await writeAll(this.#file, part);
    this.#left -= part.byteLength;
    return bytes.subarray(part.byteLength);
  }

  async written(): Promise<void> {}
}

/** Version 2: compressed chunks (zstd-chunks.ts), each decompressed in libuv's pool as it completes. */
class CompressedFileOutput implements FileOutput {
  readonly #file: FileHandle;
  readonly #source: string;
  #left: number;
  /** The bytes of the piece's header or frame gathered so far. */
  #gathered: Uint8Array[] = [];
  #gatheredBytes = 0;
  /** The piece whose frame is gathered; undefined: its header is. */
  #chunk: { rawLength: number; compressedLength: number } | undefined;
  /** Chunks being decompressed (in libuv's pool), oldest first: written in order, the next ones decompressed meanwhile. */
  readonly #decompressing: Promise<Buffer>[] = [];

  constructor(file: FileHandle, length: number, source: string) {
    this.#file = file;
    this.#left = length;
    this.#source = source;
  }

  get full(): boolean {
    return this.#left === 0 && this.#chunk === undefined;
  }

  async take(bytes: Uint8Array): Promise<Uint8Array> {
    let rest = bytes;
    while (!this.full && rest.byteLength > 0) {
      const wanted = (this.#chunk === undefined ? ZSTD_CHUNK_HEADER_BYTES : this.#chunk.compressedLength) - this.#gatheredBytes;
      const part = rest.subarray(0, wanted);
      rest = rest.subarray(part.byteLength);
      this.#gathered.push(part);
      this.#gatheredBytes += part.byteLength;
      if (part.byteLength < wanted) break;
      const whole = this.#gathered.length === 1 ? (this.#gathered[0] as Uint8Array) : Buffer.concat(this.#gathered);
      this.#gathered = [];
      this.#gatheredBytes = 0;
      const chunk = this.#chunk;
      if (chunk === undefined) {
        const next = readZstdChunkHeader(whole, this.#source);
        if (next.rawLength > this.#left)
          throw corruptChunks(this.#source, `a compressed chunk of its lmdb file (${next.rawLength} bytes) goes past the file's end`);
        this.#chunk = next;
        continue;
      }
      this.#chunk = undefined;
      const raw = decompressZstdChunk(whole, chunk.rawLength, this.#source);
      // A failure shows when the chunk is written; marked handled meanwhile.
      raw.catch(() => {});
      this.#decompressing.push(raw);
      this.#left -= chunk.rawLength;
      if (this.#decompressing.length >= CHUNKS_IN_FLIGHT) await this.#writeOldest();
    }
    return rest;
  }

  async written(): Promise<void> {
    while (this.#decompressing.length > 0) await this.#writeOldest();
  }

  async #writeOldest(): Promise<void> {
    await writeAll(this.#file, await (this.#decompressing.shift() as Promise<Buffer>));
  }
}

/** Writes all of `bytes` at the file's position: a write may take fewer bytes than asked (a full disk, a network file system). */
async function writeAll(file: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let rest = bytes; rest.byteLength > 0; ) {
    const { bytesWritten } = await file.write(rest);
    if (bytesWritten === 0) throw Object.assign(new Error('the disk took no more bytes'), { code: 'ENOSPC' });
    rest = rest.subarray(bytesWritten);
  }
}

/** Chunks of a base decompressed at once (threads of libuv's pool) while the oldest is written. */
const CHUNKS_IN_FLIGHT = 4;
