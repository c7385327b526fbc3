import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { LocalRecoveryStorage, withLocalRecovery } from '../../../../src/checkpoint/storage/local-recovery-storage.ts';
import { openStateWriter } from '../../../../src/checkpoint/storage/open-state-writer.ts';
import { readStatePieces } from '../../../../src/checkpoint/storage/read-state-pieces.ts';
import { metadataFor } from '../../../harness/checkpoint-metadata.ts';

async function storages(t: TestContext): Promise<{ storage: LocalRecoveryStorage; primary: FileSystemCheckpointStorage; copies: string }> {
  const root = await mkdtemp(join(tmpdir(), 'weir-local-recovery-unit-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const primary = new FileSystemCheckpointStorage(join(root, 'job'));
  const copies = join(root, 'copies');
  const storage = new LocalRecoveryStorage(primary, copies);
  await storage.initialize();
  return { storage, primary, copies };
}

const bytesOf = (text: string) => new TextEncoder().encode(text);

test('a checkpoint state file is copied; a read takes the copy when it matches, else the storage', async (t) => {
  const { storage, primary, copies } = await storages(t);
  const location = storage.checkpointLocation(1);
  const handle = await storage.writeState(location, 'map', 0, 'keyed', bytesOf('state of 1'));
  const copy = join(copies, 'chk-1', handle.path);
  assert.equal(await readFile(copy, 'utf8'), 'state of 1');

  // The storage's file gone: the copy still serves (it is what a far storage saves).
  await rm(join(primary.root, 'chk-1', handle.path));
  assert.equal(new TextDecoder().decode(await storage.readState(location.path, handle)), 'state of 1');
  assert.deepEqual(storage.reads, { localFiles: 1, localBytes: 10, storageFiles: 0 });

  // A damaged copy is not used: the storage answers (here, that its file is missing).
  await writeFile(copy, 'state of 2');
  await assert.rejects(storage.readState(location, handle), /missing/);
  assert.equal(storage.reads.storageFiles, 1);
});

test('a state file streamed piece by piece is copied as the pieces come; an aborted one leaves no copy; savepoints stream without one', async (t) => {
  const { storage, primary, copies } = await storages(t);
  const location = storage.checkpointLocation(1);
  const file = await openStateWriter(storage, location, 'map', 0, 'keyed');
  await file.write([bytesOf('state '), bytesOf('of ')]);
  await file.write([bytesOf('1')]);
  const handle = await file.finish();
  assert.equal(await readFile(join(copies, 'chk-1', handle.path), 'utf8'), 'state of 1');
  await rm(join(primary.root, 'chk-1', handle.path));
  assert.equal(new TextDecoder().decode(await storage.readState(location, handle)), 'state of 1');
  assert.deepEqual(storage.reads, { localFiles: 1, localBytes: 10, storageFiles: 0 });

  const given = await openStateWriter(storage, location, 'map', 1, 'keyed');
  await given.write([bytesOf('half')]);
  await given.abort();
  assert.deepEqual(await readdir(join(copies, 'chk-1')), [handle.path]);

  const savepoint = storage.savepointLocation(2);
  const saved = await openStateWriter(storage, savepoint, 'map', 0, 'keyed');
  await saved.write([bytesOf('kept')]);
  await saved.finish();
  assert.deepEqual((await readdir(copies)).sort(), ['chk-1']);
});

test('savepoints are not copied; a discarded checkpoint takes its copies; copies of checkpoints the storage lacks are pruned', async (t) => {
  const { storage, copies } = await storages(t);
  const savepoint = storage.savepointLocation(3);
  await storage.writeState(savepoint, 'map', 0, 'keyed', bytesOf('savepoint'));
  assert.deepEqual(await readdir(copies).catch(() => []), []);

  for (const id of [1, 2]) {
    const location = storage.checkpointLocation(id);
    const keyed = await storage.writeState(location, 'map', 0, 'keyed', bytesOf(`state of ${id}`));
    await storage.commitMetadata(location, metadataFor(location, [{ uid: 'map', name: 'Map', parallelism: 1, subtasks: [{ subtaskIndex: 0, keyed }] }]));
  }
  await storage.writeState(storage.checkpointLocation(9), 'map', 0, 'keyed', bytesOf('written, never completed'));
  await storage.discard(storage.checkpointLocation(1));
  assert.deepEqual((await readdir(copies)).sort(), ['chk-2', 'chk-9']);
  // Checkpoint 9 is a folder of the storage (its files were written): its copies stay until it is discarded.
  await rm(join(storage.root, 'chk-9'), { recursive: true });
  await storage.pruneCopies();
  assert.deepEqual(await readdir(copies), ['chk-2']);
});

test('withLocalRecovery wraps only when checkpointing.localRecovery is on, in a folder per job and storage', () => {
  const primary = new FileSystemCheckpointStorage('/tmp/some-job');
  const checkpointing = { interval: 1000, storage: '/tmp/some-job' } as never;
  assert.equal(withLocalRecovery(primary, { checkpointing }, 'job'), primary);
  const wrapped = withLocalRecovery(
    primary,
    { checkpointing: { ...(checkpointing as object), localRecovery: true } as never, stateDir: '/var/weir' },
    'my job',
  );
  assert.ok(wrapped instanceof LocalRecoveryStorage);
  assert.match(wrapped.folder, /^\/var\/weir\/local-recovery\/my_job-[0-9a-f]{12}$/);
});

test('a state file read piece by piece: from the copy when it matches, else from the storage, checked at the end', async (t) => {
  const { storage, primary, copies } = await storages(t);
  const location = storage.checkpointLocation(1);
  const text = 'x'.repeat(9 * 1024 * 1024); // more than one 4 MiB piece
  const handle = await storage.writeState(location, 'map', 0, 'keyed', bytesOf(text));
  const read = async () => {
    const pieces: Uint8Array[] = [];
    for await (const piece of readStatePieces(storage, location, handle)) pieces.push(piece);
    return pieces;
  };
  const local = await read();
  assert.equal(local.length, 3);
  assert.equal(Buffer.concat(local).toString(), text);
  assert.deepEqual(storage.reads, { localFiles: 1, localBytes: text.length, storageFiles: 0 });

  // A damaged copy: the storage's file, piece by piece.
  const copy = join(copies, 'chk-1', handle.path);
  await writeFile(copy, 'damaged');
  assert.equal(Buffer.concat(await read()).toString(), text);
  assert.equal(storage.reads.storageFiles, 1);

  // The storage's file damaged too: the read throws at its end (its pieces are not to be used).
  await writeFile(join(primary.root, 'chk-1', handle.path), `y${text.slice(1)}`);
  await assert.rejects(read(), /sha256 mismatch/);
  await writeFile(join(primary.root, 'chk-1', handle.path), text.slice(1));
  await assert.rejects(read(), /size mismatch/);
});
