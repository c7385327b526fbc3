import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { CheckpointStorage } from '../../../../src/checkpoint/storage/checkpoint-storage.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { openStateWriter } from '../../../../src/checkpoint/storage/open-state-writer.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

async function freshStorage(t: TestContext): Promise<FileSystemCheckpointStorage> {
  const root = await mkdtemp(join(tmpdir(), 'weir-streamed-state-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storage = new FileSystemCheckpointStorage(join(root, 'job'));
  await storage.initialize();
  return storage;
}

/** Pieces of their own memory (as a snapshot's are), and what they make together. */
function pieces(count: number, size: number): { pieces: Uint8Array[]; whole: Buffer } {
  const made = Array.from({ length: count }, (_, i) => new Uint8Array(new ArrayBuffer(size + i)).fill(i % 251));
  return { pieces: made, whole: Buffer.concat(made) };
}

test('a state file written piece by piece is the pieces in order: its handle holds their size and SHA-256, it reads back, each piece freed once written', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(1);
  const file = await openStateWriter(storage, location, 'counts', 0, 'keyed');
  const first = pieces(3, 1000);
  // More than a few MB in one call: hashed over several turns of the event loop.
  const second = pieces(5, 2 * 1024 * 1024);
  const whole = Buffer.concat([first.whole, second.whole]);
  await file.write(first.pieces);
  await file.write(second.pieces);
  await file.write([]);
  assert.ok(
    [...first.pieces, ...second.pieces].every((piece) => piece.byteLength === 0),
    'each piece is freed once written',
  );
  const handle = await file.finish();
  assert.deepEqual(handle, { path: 'counts-0.keyed', size: whole.byteLength, sha256: createHash('sha256').update(whole).digest('hex') });
  assert.ok(Buffer.from(await storage.readState(location, handle)).equals(whole));
});

test('a state file given up is deleted; one written twice is refused as writeState refuses it', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(2);
  const file = await openStateWriter(storage, location, 'counts', 0, 'keyed');
  await file.write(pieces(2, 10).pieces);
  await file.abort();
  assert.deepEqual(await readdir(location.path), []);
  const again = await openStateWriter(storage, location, 'counts', 0, 'keyed');
  await again.write(pieces(1, 10).pieces);
  await again.finish();
  await assert.rejects(
    openStateWriter(storage, location, 'counts', 0, 'keyed'),
    (error: unknown) => error instanceof WeirError && error.code === 'STATE_FILE_EXISTS',
  );
});

test('a storage that cannot stream gets the pieces through writeState at the end, in one piece', async (t) => {
  const fs = await freshStorage(t);
  const written: Uint8Array[] = [];
  const storage = {
    writeState: async (...args: Parameters<CheckpointStorage['writeState']>) => {
      written.push(Buffer.from(args[4]));
      return fs.writeState(...args);
    },
  } as unknown as CheckpointStorage;
  const location = fs.checkpointLocation(3);
  const file = await openStateWriter(storage, location, 'counts', 1, 'keyed');
  const { pieces: made, whole } = pieces(4, 100);
  await file.write(made.slice(0, 2));
  await file.write(made.slice(2));
  assert.equal(written.length, 0, 'held until finish');
  const handle = await file.finish();
  assert.equal(written.length, 1);
  assert.ok(Buffer.from(written[0] as Uint8Array).equals(whole));
  assert.equal(handle.size, whole.byteLength);
});
