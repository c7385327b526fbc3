import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { LMDB_BASE_FORMAT_VERSION, readLmdbBase, readLmdbBaseLayout, writeLmdbBaseHeader } from '../../../src/state/lmdb-base-format.ts';
import { readKeyedFullSnapshot } from '../../../src/state/lmdb-base-reader.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { releaseRestoreFile, reserveRestoreFile } from '../../../src/state/lmdb-working-folder.ts';
import { ZSTD_CHUNK_HEADER_BYTES } from '../../../src/state/zstd-chunks.ts';

/**
 * A restore streams a disk backend's base into its working folder as the storage reads it (never
 * held whole): lmdb's file goes to a reserved file, the correction stays in memory; a canonical
 * snapshot, or a base the backend does not take (another range), comes back whole; a read that
 * fails at its end (the storage's checksum) returns nothing.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-base-reader-'));
const disposers: (() => Promise<void>)[] = [];
after(async () => {
  for (const dispose of disposers) await dispose();
  rmSync(root, { recursive: true, force: true });
});
const range = keyGroupRange(0, 7);

function backend(options: { base?: ConstructorParameters<typeof LmdbKeyedStateBackend>[0]['base'] } = {}): LmdbKeyedStateBackend {
  const made = new LmdbKeyedStateBackend({ maxParallelism: 8, keyGroupRange: range, operatorName: 'reader', dir: mkdtempSync(join(root, 'b-')), ...options });
  disposers.push(() => made.dispose());
  return made;
}

async function* piecesOf(bytes: Uint8Array, size: number, failAtEnd = false): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < bytes.length; start += size) yield bytes.subarray(start, start + size);
  if (failAtEnd) throw new Error('sha256 mismatch');
}

async function baseBytes(): Promise<{ bytes: Uint8Array; canonical: Uint8Array }> {
  const source = backend();
  const value = source.getState(valueState<number>('v'));
  for (let i = 0; i < 5000; i++) {
    source.setCurrentKey(`k${i}`);
    value.update(i);
  }
  const writer = source.snapshotAsync({ checkpointId: 1, base: undefined });
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  return { bytes: writer.result(), canonical: source.snapshot() };
}

test('a base streamed in pieces of any size: lmdb file to the reserved file, the correction kept; the store opens it', async () => {
  const { bytes, canonical } = await baseBytes();
  for (const size of [7, 4096, bytes.length]) {
    const folder = mkdtempSync(join(root, 'r-'));
    const path = reserveRestoreFile(folder);
    const read = await readKeyedFullSnapshot(piecesOf(bytes, size), 'the test base', () => path);
    assert.ok('base' in read, `pieces of ${size}: a base`);
    assert.deepEqual(read.base.file, { path });
    assert.ok(existsSync(path));
    const restored = backend({ base: read.base });
    assert.ok(!existsSync(path), 'moved into the store');
    assert.deepEqual(restored.snapshot(), canonical, `pieces of ${size}: the same state`);
    releaseRestoreFile(path);
  }
});

test('a base the backend does not take, and a canonical snapshot, come back whole; a read failing at its end returns nothing', async () => {
  const { bytes, canonical } = await baseBytes();
  const notTaken = await readKeyedFullSnapshot(piecesOf(bytes, 1000), 'the test base', () => undefined);
  assert.ok('bytes' in notTaken);
  assert.deepEqual(Buffer.from(notTaken.bytes), Buffer.from(bytes));
  const plain = await readKeyedFullSnapshot(piecesOf(canonical, 1000), 'a canonical snapshot', () => assert.fail('not a base'));
  assert.ok('bytes' in plain);
  assert.deepEqual(Buffer.from(plain.bytes), Buffer.from(canonical));
  const path = reserveRestoreFile(mkdtempSync(join(root, 'f-')));
  await assert.rejects(
    readKeyedFullSnapshot(piecesOf(bytes, 4096, true), 'the test base', () => path),
    /sha256 mismatch/,
  );
  releaseRestoreFile(path);
  assert.ok(!existsSync(path));
  await assert.rejects(
    readKeyedFullSnapshot(piecesOf(bytes.subarray(0, 30), 7), 'a truncated base', () => path),
    /a truncated base is corrupt/,
  );
});

test("lmdb's file goes compressed (version 2, pieces of zstd frames); a version-1 base (the file as it is) still reads; a damaged frame is named", async () => {
  const { bytes, canonical } = await baseBytes();
  const base = readLmdbBase(bytes, 'the test base');
  assert.equal(Buffer.from(bytes).readUint16LE(4), LMDB_BASE_FORMAT_VERSION);
  assert.ok(bytes.length < base.file.length / 2, `${bytes.length} bytes for a file of ${base.file.length}`);
  const { header } = readLmdbBaseLayout(bytes, 'the test base');
  const v1 = Buffer.concat([writeLmdbBaseHeader(header, base.file.length, 1), base.file, base.correction]);
  assert.deepEqual(backend({ base: readLmdbBase(v1, 'a version-1 base') }).snapshot(), canonical, 'a version-1 base in memory');
  for (const size of [7, v1.length]) {
    const path = reserveRestoreFile(mkdtempSync(join(root, 'v1-')));
    const read = await readKeyedFullSnapshot(piecesOf(v1, size), 'a version-1 base', () => path);
    assert.ok('base' in read);
    assert.deepEqual(backend({ base: read.base }).snapshot(), canonical, `a version-1 base streamed in pieces of ${size}`);
    releaseRestoreFile(path);
  }
  const damaged = Buffer.from(bytes);
  const { fileStart } = readLmdbBaseLayout(bytes, 'the test base');
  const at = fileStart + ZSTD_CHUNK_HEADER_BYTES + 40;
  damaged[at] = (damaged[at] as number) ^ 0xff;
  assert.throws(() => readLmdbBase(damaged, 'a damaged base'), /a damaged base is corrupt: a compressed chunk does not decompress/);
  const path = reserveRestoreFile(mkdtempSync(join(root, 'd-')));
  await assert.rejects(
    readKeyedFullSnapshot(piecesOf(damaged, 4096), 'a damaged base', () => path),
    /a damaged base is corrupt: a compressed chunk does not decompress/,
  );
  releaseRestoreFile(path);
});
