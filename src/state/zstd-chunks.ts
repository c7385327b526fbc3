import { promisify } from 'node:util';
import { constants as zlibConstants, zstdCompress, zstdDecompress, zstdDecompressSync } from 'node:zlib';
import { WeirError } from '../core/errors/weir-error.ts';

/*
 * Compressed chunks, the unit in which Weir's state files hold compressed bytes (a disk backend's
 * base, lmdb-base-format.ts; an incremental checkpoint's changes, compressed-snapshot.ts):
 * ```
 * uint32 (LE)   R, the chunk's raw length (1 to 4 MiB)
 * uint32 (LE)   C, its compressed length
 * C bytes       one zstd frame of R bytes, with its content checksum
 * ```
 * Each chunk is compressed on its own (in a thread of libuv's pool), so chunks are written as they
 * come and read back one at a time; the checksum makes a damaged chunk fail to decompress rather
 * than give damaged state.
 */

/** The bytes before each chunk's frame: its raw and compressed lengths. */
export const ZSTD_CHUNK_HEADER_BYTES = 8;
/** The most raw bytes in one chunk (a larger claim is damage). */
export const ZSTD_CHUNK_MAX_BYTES = 4 * 1024 * 1024;

/**
 * zstd at level 1 (about 400 MB/s a core here; lmdb's file of random writes and the canonical
 * changes both come out 4-9x smaller), each frame with its content checksum.
 */
const COMPRESS_OPTIONS = {
  params: { [zlibConstants.ZSTD_c_compressionLevel]: 1, [zlibConstants.ZSTD_c_checksumFlag]: 1 },
  // Node's default (16 KiB) hands the output back in many small steps between the threads: several
  // times slower. A chunk's frame is a fraction of it: 1 MiB steps (each a buffer of that size) suffice.
  chunkSize: 1024 * 1024,
};
const DECOMPRESS_OPTIONS = { maxOutputLength: ZSTD_CHUNK_MAX_BYTES, chunkSize: ZSTD_CHUNK_MAX_BYTES };

const compressAsync = promisify(zstdCompress);
const decompressAsync = promisify(zstdDecompress);

/** Compresses `raw` (at most ZSTD_CHUNK_MAX_BYTES) into a chunk, in libuv's pool: its header, then its frame. */
export async function compressZstdChunk(raw: Uint8Array): Promise<[header: Uint8Array, frame: Uint8Array]> {
  const frame = await compressAsync(raw, COMPRESS_OPTIONS);
  return [zstdChunkHeader(raw.byteLength, frame.length), frame];
}

function zstdChunkHeader(rawLength: number, compressedLength: number): Uint8Array {
  const out = Buffer.allocUnsafe(ZSTD_CHUNK_HEADER_BYTES);
  out.writeUint32LE(rawLength, 0);
  out.writeUint32LE(compressedLength, 4);
  return out;
}

/** A chunk's lengths, from its header's bytes; damage (a chunk larger than any written, or empty) throws naming `source`. */
export function readZstdChunkHeader(bytes: Uint8Array, source: string): { rawLength: number; compressedLength: number } {
  const header = Buffer.from(bytes.buffer, bytes.byteOffset, ZSTD_CHUNK_HEADER_BYTES);
  const rawLength = header.readUint32LE(0);
  const compressedLength = header.readUint32LE(4);
  // zstd never makes a frame much larger than its input (ZSTD_compressBound: about 1/256 more); a larger claim is damage.
  if (rawLength === 0 || rawLength > ZSTD_CHUNK_MAX_BYTES || compressedLength === 0 || compressedLength > zstdBound(rawLength))
    throw corruptChunks(source, `a compressed chunk claims ${rawLength} bytes in ${compressedLength}`);
  return { rawLength, compressedLength };
}

/** The largest frame zstd makes of `rawLength` bytes (ZSTD_compressBound), its header and checksum with room to spare. */
function zstdBound(rawLength: number): number {
  return rawLength + (rawLength >>> 8) + 1024;
}

/** Decompresses a chunk's frame in libuv's pool, checking it holds the length its header said. */
export async function decompressZstdChunk(frame: Uint8Array, rawLength: number, source: string): Promise<Buffer> {
  let raw: Buffer;
  try {
    raw = await decompressAsync(frame, DECOMPRESS_OPTIONS);
  } catch (error) {
    throw corruptChunks(source, `a compressed chunk does not decompress: ${(error as Error).message}`, error);
  }
  return checked(raw, rawLength, source);
}

/**
 * Decompresses the chunks of `bytes` from `start` on this thread, until they hold `rawTotal` bytes
 * (undefined: until the end of `bytes`); returns the raw bytes and where the chunks ended.
 */
export function readZstdChunks(bytes: Uint8Array, start: number, rawTotal: number | undefined, source: string): { raw: Buffer; end: number } {
  const pieces: Buffer[] = [];
  let position = start;
  let held = 0;
  while (rawTotal === undefined ? position < bytes.length : held < rawTotal) {
    if (position + ZSTD_CHUNK_HEADER_BYTES > bytes.length) throw corruptChunks(source, 'it ends inside a compressed chunk');
    const { rawLength, compressedLength } = readZstdChunkHeader(bytes.subarray(position), source);
    position += ZSTD_CHUNK_HEADER_BYTES;
    if (position + compressedLength > bytes.length) throw corruptChunks(source, 'it ends inside a compressed chunk');
    if (rawTotal !== undefined && held + rawLength > rawTotal) throw corruptChunks(source, `its compressed chunks hold more than ${rawTotal} bytes`);
    let raw: Buffer;
    try {
      raw = zstdDecompressSync(bytes.subarray(position, position + compressedLength), DECOMPRESS_OPTIONS);
    } catch (error) {
      throw corruptChunks(source, `a compressed chunk does not decompress: ${(error as Error).message}`, error);
    }
    pieces.push(checked(raw, rawLength, source));
    position += compressedLength;
    held += rawLength;
  }
  return { raw: pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, held), end: position };
}

function checked(raw: Buffer, rawLength: number, source: string): Buffer {
  if (raw.length !== rawLength) throw corruptChunks(source, `a compressed chunk holds ${raw.length} bytes, not ${rawLength}`);
  return raw;
}

/** The error for damaged compressed chunks in `source`. */
export function corruptChunks(source: string, problem: string, cause?: unknown): WeirError {
  return new WeirError('STATE_SNAPSHOT_CORRUPT', `${source} is corrupt: ${problem}`, {
    fault: 'external',
    hint: 'the checkpoint file was truncated or altered; restore from another checkpoint or savepoint',
    cause,
  });
}
