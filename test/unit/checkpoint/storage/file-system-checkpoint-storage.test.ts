import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import { CompletedCheckpointStore } from '../../../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { metadataFor } from '../../../harness/checkpoint-metadata.ts';
import { assertIncrementalRetention, assertInterruptedRetentionKeepsChains } from '../../../harness/incremental-retention.ts';

async function freshStorage(t: TestContext): Promise<FileSystemCheckpointStorage> {
  const root = await mkdtemp(join(tmpdir(), 'weir-checkpoint-storage-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storage = new FileSystemCheckpointStorage(join(root, 'job'));
  await storage.initialize();
  return storage;
}

/** A checkpoint with one subtask's keyed state, committed. */
async function completeCheckpoint(
  storage: FileSystemCheckpointStorage,
  checkpointId: number,
  location = storage.checkpointLocation(checkpointId),
): Promise<CheckpointLocation> {
  const keyed = await storage.writeState(location, 'map', 0, 'keyed', new TextEncoder().encode(`state of ${checkpointId}`));
  await storage.commitMetadata(location, metadataFor(location, [{ uid: 'map', name: 'Map', parallelism: 1, subtasks: [{ subtaskIndex: 0, keyed }] }]));
  return location;
}

function weirError(code: string, message: RegExp, hint?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    if (hint !== undefined) assert.match(error.hint ?? '', hint);
    return true;
  };
}

test('state round trip: the handle carries size and sha256', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(1);
  assert.deepEqual(location, { kind: 'checkpoint', checkpointId: 1, path: join(storage.root, 'chk-1') });
  const bytes = new Uint8Array([1, 2, 3, 250]);
  const handle = await storage.writeState(location, 'window', 2, 'operator', bytes);
  assert.equal(handle.path, 'window-2.operator');
  assert.equal(handle.size, 4);
  assert.match(handle.sha256, /^[0-9a-f]{64}$/);
  assert.deepEqual(new Uint8Array(await storage.readState(location, handle)), bytes);
  assert.deepEqual(new Uint8Array(await storage.readState(location.path, handle)), bytes);
  const empty = await storage.writeState(location, 'window', 2, 'keyed', new Uint8Array());
  assert.equal((await storage.readState(location, empty)).byteLength, 0);
});

test('corrupt or missing state is detected and named', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(1);
  const handle = await storage.writeState(location, 'map', 0, 'keyed', new TextEncoder().encode('hello'));
  const file = join(location.path, handle.path);
  await writeFile(file, 'jello');
  await assert.rejects(
    storage.readState(location, handle),
    weirError('STATE_FILE_CORRUPT', /^state file .*map-0\.keyed is corrupt: sha256 mismatch/, /another checkpoint/),
  );
  await writeFile(file, 'hello!');
  await assert.rejects(storage.readState(location, handle), weirError('STATE_FILE_CORRUPT', /is corrupt: size mismatch \(expected 5 bytes, found 6\)/));
  await rm(file);
  await assert.rejects(storage.readState(location, handle), weirError('STATE_FILE_MISSING', /^state file .*map-0\.keyed is missing$/, /another checkpoint/));
});

test('a state file is written once', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(1);
  await storage.writeState(location, 'map', 0, 'keyed', new Uint8Array([1]));
  await assert.rejects(storage.writeState(location, 'map', 0, 'keyed', new Uint8Array([2])), weirError('STATE_FILE_EXISTS', /written twice/));
});

test('odd operator uids: safe file names, uid kept in the metadata', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(3);
  const uid = 'a/b c:é';
  const handle = await storage.writeState(location, uid, 1, 'keyed', new Uint8Array([9]));
  assert.equal(handle.path, 'a%2Fb%20c%3A%C3%A9-1.keyed');
  assert.deepEqual(await readdir(location.path), [handle.path]);
  await storage.commitMetadata(location, metadataFor(location, [{ uid, name: 'odd', parallelism: 2, subtasks: [{ subtaskIndex: 1, keyed: handle }] }]));
  const read = await storage.readMetadata(location.path);
  assert.equal(read.operators[0]?.uid, uid);
  assert.deepEqual([...(await storage.readState(read.location, read.operators[0]!.subtasks[0]!.keyed!))], [9]);
});

test('metadata commit is atomic: only _metadata makes a checkpoint exist', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(1);
  await storage.writeState(location, 'map', 0, 'keyed', new Uint8Array([1]));
  await writeFile(join(location.path, '_metadata.tmp'), JSON.stringify(metadataFor(location)));
  assert.equal(await new CompletedCheckpointStore(storage).latest(), undefined);
  await assert.rejects(
    storage.readMetadata(location.path),
    weirError('CHECKPOINT_NOT_COMPLETED', /^no _metadata in .*chk-1: it is not a completed checkpoint or savepoint$/, /completed/),
  );
  const [listed] = await new CompletedCheckpointStore(storage).list();
  assert.equal(listed?.completed, false);

  await storage.commitMetadata(location, metadataFor(location));
  assert.deepEqual((await readdir(location.path)).sort(), ['_metadata', 'map-0.keyed']);
  const read = await storage.readMetadata(location.path);
  assert.deepEqual(read, { ...metadataFor(location), location });
  assert.deepEqual(await storage.readMetadata(join(location.path, '_metadata')), read);
  assert.deepEqual(await new CompletedCheckpointStore(storage).latest(), read);
  await assert.rejects(storage.commitMetadata(location, metadataFor(location)), weirError('CHECKPOINT_ALREADY_COMPLETED', /already exists/));
});

test('commitMetadata refuses metadata that does not fit the location', async (t) => {
  const storage = await freshStorage(t);
  const location = storage.checkpointLocation(2);
  await assert.rejects(
    storage.commitMetadata(location, { ...metadataFor(location), checkpointId: 3 }),
    weirError('INVALID_CHECKPOINT_METADATA', /does not belong/),
  );
  await assert.rejects(
    storage.commitMetadata(location, { ...metadataFor(location), maxParallelism: 0 }),
    weirError('INVALID_CHECKPOINT_METADATA', /maxParallelism/),
  );
});

test('readMetadata of a path that does not exist', async (t) => {
  const storage = await freshStorage(t);
  await assert.rejects(storage.readMetadata(join(storage.root, 'chk-99')), weirError('CHECKPOINT_NOT_FOUND', /does not exist/, /weir checkpoints list/));
});

test('the latest completed checkpoint ignores incomplete higher ids', async (t) => {
  const storage = await freshStorage(t);
  assert.equal(await new CompletedCheckpointStore(storage).latest(), undefined);
  await completeCheckpoint(storage, 1);
  await completeCheckpoint(storage, 2);
  await storage.writeState(storage.checkpointLocation(3), 'map', 0, 'keyed', new Uint8Array([1]));
  await mkdir(join(storage.root, 'chk-4'));
  await mkdir(join(storage.root, 'not-a-checkpoint'));
  const latest = await new CompletedCheckpointStore(storage).latest();
  assert.equal(latest?.checkpointId, 2);
  assert.equal(latest?.location.path, join(storage.root, 'chk-2'));
  assert.deepEqual(latest?.properties, { sink: { pending: ['txn-1'] } });
});

test('a completed savepoint newer than every checkpoint is what a job resumes from (its transactions are committed)', async (t) => {
  const storage = await freshStorage(t);
  await completeCheckpoint(storage, 1);
  await completeCheckpoint(storage, 2);
  const savepoint = storage.savepointLocation(3);
  await completeCheckpoint(storage, 3, savepoint);
  await mkdir(storage.savepointLocation(5).path, { recursive: true }); // a savepoint that never completed
  assert.equal((await new CompletedCheckpointStore(storage).latest())?.location.path, savepoint.path);
  await completeCheckpoint(storage, 4);
  assert.equal((await new CompletedCheckpointStore(storage).latest())?.location.path, join(storage.root, 'chk-4'));
});

test('highestCheckpointId counts incomplete folders and savepoints', async (t) => {
  const storage = await freshStorage(t);
  assert.equal(await new CompletedCheckpointStore(storage).highestCheckpointId(), 0);
  await completeCheckpoint(storage, 1);
  await mkdir(storage.checkpointLocation(5).path);
  assert.equal(await new CompletedCheckpointStore(storage).highestCheckpointId(), 5);
  await completeCheckpoint(storage, 7, storage.savepointLocation(7));
  assert.equal(await new CompletedCheckpointStore(storage).highestCheckpointId(), 7);
  assert.equal(await new CompletedCheckpointStore(new FileSystemCheckpointStorage(join(storage.root, 'nothing-yet'))).highestCheckpointId(), 0);
});

test('a corrupt latest checkpoint is an error, not a silent fallback', async (t) => {
  const storage = await freshStorage(t);
  await completeCheckpoint(storage, 1);
  await completeCheckpoint(storage, 2);
  const metadataFile = join(storage.checkpointLocation(2).path, '_metadata');
  await writeFile(metadataFile, '{"version": 1, "kind": "chec');
  await assert.rejects(
    storage.readMetadata(metadataFile),
    weirError('CHECKPOINT_METADATA_CORRUPT', /_metadata is corrupt: not valid JSON/, /another checkpoint/),
  );
  await assert.rejects(
    new CompletedCheckpointStore(storage).latest(),
    weirError(
      'CHECKPOINT_METADATA_CORRUPT',
      /chk-2\/_metadata is corrupt: not valid JSON/,
      /^delete .*chk-2 to fall back to the previous completed checkpoint, chk-1$/,
    ),
  );

  const good = JSON.parse(await readFile(join(storage.checkpointLocation(1).path, '_metadata'), 'utf8')) as Record<string, unknown>;
  await writeFile(metadataFile, JSON.stringify({ ...good, checkpointId: 2, completedAt: 'yesterday' }));
  await assert.rejects(
    new CompletedCheckpointStore(storage).latest(),
    weirError('CHECKPOINT_METADATA_CORRUPT', /_metadata is corrupt: completedAt: /, /delete .*chk-2/),
  );
  await writeFile(metadataFile, JSON.stringify(good)); // checkpoint 1's metadata copied into chk-2
  await assert.rejects(storage.readMetadata(metadataFile), weirError('CHECKPOINT_METADATA_CORRUPT', /checkpointId: 1 does not match its folder chk-2/));

  const summaries = await new CompletedCheckpointStore(storage).list();
  assert.deepEqual(
    summaries.map((summary) => [summary.checkpointId, summary.completed, summary.problem !== undefined]),
    [
      [1, true, false],
      [2, false, true],
    ],
  );

  await storage.discard(storage.checkpointLocation(2));
  assert.equal((await new CompletedCheckpointStore(storage).latest())?.checkpointId, 1);
});

test('metadata from a newer Weir is refused with a hint to upgrade', async (t) => {
  const storage = await freshStorage(t);
  const location = await completeCheckpoint(storage, 1);
  const metadataFile = join(location.path, '_metadata');
  const future = { ...JSON.parse(await readFile(metadataFile, 'utf8')), version: 3, somethingNew: [] };
  await writeFile(metadataFile, JSON.stringify(future));
  await assert.rejects(
    storage.readMetadata(location.path),
    weirError('CHECKPOINT_METADATA_TOO_NEW', /chk-1\/_metadata has metadata version 3, newer than this Weir reads \(2\)$/, /^use a newer Weir/),
  );
  await assert.rejects(
    new CompletedCheckpointStore(storage).latest(),
    weirError('CHECKPOINT_METADATA_TOO_NEW', /newer than this Weir reads \(2\)/, /^use a newer Weir, or delete .*chk-1 to start without state/),
  );
});

test('listCheckpoints: ascending, with sizes, savepoints on request', async (t) => {
  const storage = await freshStorage(t);
  await completeCheckpoint(storage, 2);
  await completeCheckpoint(storage, 10);
  await storage.writeState(storage.checkpointLocation(11), 'map', 0, 'keyed', new Uint8Array(100));
  const savepoint = await completeCheckpoint(storage, 5, storage.savepointLocation(5));
  const checkpoints = await new CompletedCheckpointStore(storage).list();
  assert.deepEqual(
    checkpoints.map((c) => [c.checkpointId, c.completed, c.location.kind]),
    [
      [2, true, 'checkpoint'],
      [10, true, 'checkpoint'],
      [11, false, 'checkpoint'],
    ],
  );
  assert.equal(checkpoints[2]?.sizeBytes, 100);
  assert.ok((checkpoints[0]?.sizeBytes ?? 0) > 100);
  assert.equal(checkpoints[0]?.metadata?.jobName, 'test-job');
  const all = await new CompletedCheckpointStore(storage).list({ includeSavepoints: true });
  assert.deepEqual(
    all.map((c) => c.checkpointId),
    [2, 5, 10, 11],
  );
  assert.deepEqual(all[1]?.location, savepoint);
  assert.equal(all[1]?.metadata?.kind, 'savepoint');
});

test('subsume keeps the newest completed checkpoints and never touches savepoints', async (t) => {
  const storage = await freshStorage(t);
  await completeCheckpoint(storage, 1);
  await mkdir(storage.checkpointLocation(2).path); // aborted
  await completeCheckpoint(storage, 3);
  const savepoint = await completeCheckpoint(storage, 4, storage.savepointLocation(4));
  await completeCheckpoint(storage, 5);
  await storage.writeState(storage.checkpointLocation(6), 'map', 0, 'keyed', new Uint8Array([1])); // aborted, below 7
  await completeCheckpoint(storage, 7);
  await storage.writeState(storage.checkpointLocation(8), 'map', 0, 'keyed', new Uint8Array([1])); // in progress

  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(2), [1, 2, 3, 6]);
  const left = await new CompletedCheckpointStore(storage).list({ includeSavepoints: true });
  assert.deepEqual(
    left.map((c) => [c.checkpointId, c.location.kind, c.completed]),
    [
      [4, 'savepoint', true],
      [5, 'checkpoint', true],
      [7, 'checkpoint', true],
      [8, 'checkpoint', false],
    ],
  );
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), [5]);
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), []);
  assert.equal((await storage.readMetadata(savepoint.path)).kind, 'savepoint');
  assert.equal(await new CompletedCheckpointStore(storage).highestCheckpointId(), 8);

  await assert.rejects(
    new CompletedCheckpointStore(storage).subsume(0),
    weirError('INVALID_RETAINED_CHECKPOINTS', /checkpointing\.retained: 0/, /at least one/),
  );
});

test('subsume with no completed checkpoint deletes nothing', async (t) => {
  const storage = await freshStorage(t);
  await mkdir(storage.checkpointLocation(1).path);
  await mkdir(storage.checkpointLocation(2).path);
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), []);
  assert.equal((await new CompletedCheckpointStore(storage).list()).length, 2);
});

test('discard deletes only what it is given, savepoints only explicitly', async (t) => {
  const storage = await freshStorage(t);
  const checkpoint = await completeCheckpoint(storage, 1);
  const savepoint = await completeCheckpoint(storage, 2, storage.savepointLocation(2));
  await assert.rejects(storage.discard({ ...savepoint, kind: 'checkpoint' }), weirError('DISCARD_REFUSED', /refusing to delete/));
  await assert.rejects(storage.discard({ kind: 'checkpoint', checkpointId: 1, path: storage.root }), weirError('DISCARD_REFUSED', /refusing/));
  await assert.rejects(
    storage.discard({ kind: 'savepoint', checkpointId: 1, path: join(tmpdir(), 'savepoints', 'savepoint-1-ab') }),
    weirError('DISCARD_REFUSED', /refusing/),
  );
  await storage.discard(checkpoint);
  await storage.discard(checkpoint); // gone already: nothing to do
  assert.deepEqual(
    (await new CompletedCheckpointStore(storage).list({ includeSavepoints: true })).map((c) => c.location.kind),
    ['savepoint'],
  );
  await storage.discard(savepoint);
  assert.deepEqual(await new CompletedCheckpointStore(storage).list({ includeSavepoints: true }), []);
});

test('neighbours are the other folders beside the storage, never files or itself', async (t) => {
  const storage = await freshStorage(t);
  const parent = join(storage.root, '..');
  assert.deepEqual(await storage.neighbours(), []);
  await mkdir(join(parent, 'p1-e0'));
  await mkdir(join(parent, 'p1-e2'));
  await writeFile(join(parent, 'a-file'), '');
  assert.deepEqual((await storage.neighbours()).sort(), [join(parent, 'p1-e0'), join(parent, 'p1-e2')]);
});

test('savepoint locations are unique folders under savepoints/', async (t) => {
  const storage = await freshStorage(t);
  const a = storage.savepointLocation(3);
  const b = storage.savepointLocation(3);
  assert.notEqual(a.path, b.path);
  assert.match(a.path, /\/savepoints\/savepoint-3-[0-9a-f]{12}$/);
  assert.equal(a.kind, 'savepoint');
  assert.throws(() => storage.checkpointLocation(0), weirError('INVALID_CHECKPOINT_ID', /not a checkpoint id/));
});

test('initialize: a file in the way or a read-only folder is a clear error', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'weir-checkpoint-storage-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const file = join(root, 'a-file');
  await writeFile(file, '');
  await assert.rejects(
    new FileSystemCheckpointStorage(file).initialize(),
    weirError('CHECKPOINT_STORAGE_NOT_A_FOLDER', /^checkpointing\.storage: .*a-file is not a folder/, /move the file/),
  );
  await assert.rejects(new FileSystemCheckpointStorage(join(file, 'job')).initialize(), weirError('CHECKPOINT_STORAGE_NOT_A_FOLDER', /is not a folder/));
  assert.throws(() => new FileSystemCheckpointStorage(' '), weirError('INVALID_CHECKPOINT_STORAGE', /checkpointing\.storage is empty/));
  await new FileSystemCheckpointStorage(join(root, 'deep', 'er', 'job')).initialize();
  await new FileSystemCheckpointStorage(join(root, 'deep', 'er', 'job')).initialize(); // again: fine

  if (process.getuid?.() === 0 || process.platform === 'win32') return; // root writes anywhere
  const readOnly = join(root, 'read-only');
  await mkdir(readOnly);
  await chmod(readOnly, 0o555);
  try {
    await assert.rejects(
      new FileSystemCheckpointStorage(readOnly).initialize(),
      weirError('CHECKPOINT_STORAGE_NOT_WRITABLE', /cannot write to .*read-only/, /permissions/),
    );
    await assert.rejects(new FileSystemCheckpointStorage(join(readOnly, 'job')).initialize(), weirError('CHECKPOINT_STORAGE_NOT_WRITABLE', /cannot write/));
  } finally {
    await chmod(readOnly, 0o755);
  }
});

test('incremental checkpoints: a handle in an earlier checkpoint reads from its folder; subsume keeps what a kept checkpoint names', async (t) => {
  await assertIncrementalRetention(await freshStorage(t));
});

test('incremental checkpoints: retention stopped between two deletions leaves every completed checkpoint with all its files', async (t) => {
  await assertInterruptedRetentionKeepsChains(await freshStorage(t));
});
