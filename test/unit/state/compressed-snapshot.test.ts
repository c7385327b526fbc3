import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { COMPRESSED_SNAPSHOT_MAGIC, inflateKeyedSnapshot, isCompressedSnapshot, SnapshotCompressor } from '../../../src/state/compressed-snapshot.ts';
import { ZSTD_CHUNK_HEADER_BYTES, ZSTD_CHUNK_MAX_BYTES } from '../../../src/state/zstd-chunks.ts';

/**
 * An incremental checkpoint's changes are written compressed: pieces of any size gather into
 * chunks of 4 MiB, each a zstd frame with its checksum, and read back as the canonical bytes; a
 * file without the magic (an older Weir's changes) reads as it is; damage and a newer version are named.
 */

/** Canonical-looking bytes: runs of repeated text with random bytes between (compressible, not trivially). */
function sample(length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let at = 0; at < length; at += 64) {
    out.write(`key-${at % 9973}-value-`, at, 'latin1');
    randomBytes(8).copy(out, Math.min(at + 40, length - 8));
  }
  return out;
}

async function compress(pieces: Uint8Array[]): Promise<Buffer> {
  const compressor = new SnapshotCompressor();
  const out: Uint8Array[] = [];
  for (const piece of pieces) out.push(...(await compressor.push([piece])));
  out.push(...(await compressor.finish()));
  return Buffer.concat(out);
}

test('pieces of any size, across chunk boundaries, come back as the same bytes; the file is smaller', async () => {
  const raw = sample(ZSTD_CHUNK_MAX_BYTES * 2 + 12_345);
  const pieces: Uint8Array[] = [];
  for (let at = 0, size = 1; at < raw.length; at += size, size = (size * 7 + 13) % 3_000_000) pieces.push(raw.subarray(at, at + size));
  const file = await compress(pieces);
  assert.ok(isCompressedSnapshot(file));
  assert.ok(file.length < raw.length / 2, `${file.length} bytes for ${raw.length}`);
  assert.deepEqual(Buffer.from(inflateKeyedSnapshot(file, 'the test changes')), raw);
  const empty = await compress([]);
  assert.equal(empty.length, 6, 'the header alone');
  assert.equal(inflateKeyedSnapshot(empty, 'empty changes').length, 0);
});

test('bytes without the magic read as they are; a damaged chunk, a cut file, an impossible frame length and a newer version are named', async () => {
  const plain = sample(1000);
  assert.equal(inflateKeyedSnapshot(plain, 'plain'), plain);
  const file = await compress([sample(100_000)]);
  const damaged = Buffer.from(file);
  const at = 6 + ZSTD_CHUNK_HEADER_BYTES + 100;
  damaged[at] = (damaged[at] as number) ^ 0xff;
  assert.throws(() => inflateKeyedSnapshot(damaged, 'damaged changes'), /damaged changes is corrupt: a compressed chunk does not decompress/);
  assert.throws(() => inflateKeyedSnapshot(file.subarray(0, file.length - 10), 'cut changes'), /cut changes is corrupt: it ends inside a compressed chunk/);
  // A chunk header claiming a frame larger than zstd ever makes of its raw length is damage, named at once.
  const claims = Buffer.from(file);
  claims.writeUint32LE(file.length * 1000, 6 + 4);
  assert.throws(() => inflateKeyedSnapshot(claims, 'claiming changes'), /claiming changes is corrupt: a compressed chunk claims 100000 bytes in/);
  const newer = Buffer.from(file);
  newer.writeUint16LE(9, COMPRESSED_SNAPSHOT_MAGIC.length);
  assert.throws(() => inflateKeyedSnapshot(newer, 'newer changes'), /format version 9 is newer than this Weir supports/);
});
