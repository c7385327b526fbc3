import { DataInputDeserializer } from './data-input-deserializer.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import { readSnapshotHeader } from './state-snapshot-format.ts';
import { compressZstdChunk, readZstdChunks, ZSTD_CHUNK_MAX_BYTES } from './zstd-chunks.ts';

/*
 * An incremental checkpoint's changes as their state file holds them: the canonical incremental
 * snapshot (keyed-state-snapshot.ts, flag 0x01) compressed, as Flink compresses its keyed state
 * with execution.checkpointing.snapshot-compression and RocksDB its SST files. Only changes are:
 * full snapshots stay canonical as they are (savepoints are read by any Weir and any tool), and a
 * disk backend's base compresses lmdb's file itself (lmdb-base-format.ts).
 *
 * Format (version 1):
 * ```
 * "WKZS"          magic, 4 bytes
 * uint16          format version
 * chunks          compressed chunks (zstd-chunks.ts) up to the end of the file: the canonical bytes
 * ```
 * A file without the magic is read as it is (the changes of an older Weir's checkpoints).
 */
export const COMPRESSED_SNAPSHOT_VERSION = 1;
/** "WKZS": Weir keyed, zstd. */
export const COMPRESSED_SNAPSHOT_MAGIC = Uint8Array.of(0x57, 0x4b, 0x5a, 0x53);

/** Whether `bytes` is a compressed snapshot (else a canonical one, read as it is). */
export function isCompressedSnapshot(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && COMPRESSED_SNAPSHOT_MAGIC.every((byte, i) => bytes[i] === byte);
}

/** The canonical snapshot `bytes` holds: decompressed (on this thread), or `bytes` itself when it is not compressed. */
export function inflateKeyedSnapshot(bytes: Uint8Array, source: string): Uint8Array {
  if (!isCompressedSnapshot(bytes)) return bytes;
  const input = new DataInputDeserializer(bytes, source);
  readSnapshotHeader(input, COMPRESSED_SNAPSHOT_MAGIC, 'compressed keyed', COMPRESSED_SNAPSHOT_VERSION);
  return readZstdChunks(bytes, input.position, undefined, source).raw;
}

/**
 * Compresses a snapshot as its pieces come: they gather into chunks of 4 MiB, each compressed in
 * libuv's pool; what {@link push} and {@link finish} return is the file's next bytes, in order.
 */
export class SnapshotCompressor {
  #started = false;
  #held: Uint8Array[] = [];
  #heldBytes = 0;

  /** Takes the next pieces; returns the file's bytes ready (the header first, then each full chunk). */
  async push(pieces: readonly Uint8Array[]): Promise<Uint8Array[]> {
    const out = this.#start();
    for (const piece of pieces) {
      let rest = piece;
      while (rest.byteLength > 0) {
        const part = rest.subarray(0, ZSTD_CHUNK_MAX_BYTES - this.#heldBytes);
        rest = rest.subarray(part.byteLength);
        this.#held.push(part);
        this.#heldBytes += part.byteLength;
        if (this.#heldBytes === ZSTD_CHUNK_MAX_BYTES) out.push(...(await this.#compressHeld()));
      }
    }
    return out;
  }

  /** The file's last bytes: the chunk of what is held (the header alone for an empty snapshot). */
  async finish(): Promise<Uint8Array[]> {
    const out = this.#start();
    if (this.#heldBytes > 0) out.push(...(await this.#compressHeld()));
    return out;
  }

  #start(): Uint8Array[] {
    if (this.#started) return [];
    this.#started = true;
    const header = new DataOutputSerializer(8);
    header.writeBytes(COMPRESSED_SNAPSHOT_MAGIC);
    header.writeUint16(COMPRESSED_SNAPSHOT_VERSION);
    return [Uint8Array.prototype.slice.call(header.view())];
  }

  async #compressHeld(): Promise<Uint8Array[]> {
    const raw = this.#held.length === 1 ? (this.#held[0] as Uint8Array) : Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    return compressZstdChunk(raw);
  }
}
