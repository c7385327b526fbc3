/**
 * The lock fences the writes that make or unmake checkpoints (issue 32, point 5): a process whose
 * lock another one took over (it was paused past the staleness) is refused its `_metadata`, its
 * discards and its `_committed`, and hears of the loss; and a lock whose owner's clock runs behind
 * is never taken for stale while its heartbeat moves.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { CheckpointStorageLock, LOCK_FILE_NAME, LOCK_VERSION } from '../../../../src/checkpoint/storage/checkpoint-storage-lock.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { fencedWrite, type StorageLock } from '../../../../src/checkpoint/storage/storage-lock.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { metadataFor } from '../../../harness/checkpoint-metadata.ts';

async function folder(t: TestContext): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'weir-lock-fence-'));
  t.after(() => rm(path, { recursive: true, force: true }));
  return path;
}

/** Another process's lock appears whole in `root` (written aside, renamed over: as a takeover does). */
async function takenOverBy(root: string, id: string, heartbeatAt = Date.now()): Promise<void> {
  const owner = { version: LOCK_VERSION, pid: 777, host: 'other-host', startedAt: heartbeatAt, heartbeatAt, id };
  await writeFile(join(root, `${LOCK_FILE_NAME}.other`), JSON.stringify(owner));
  await rename(join(root, `${LOCK_FILE_NAME}.other`), join(root, LOCK_FILE_NAME));
}

const lockLost = (error: unknown) => {
  assert.ok(error instanceof WeirError, String(error));
  assert.equal(error.code, 'CHECKPOINT_STORAGE_LOCK_LOST');
  assert.match(
    error.message,
    /refused to write to the checkpoint storage: the lock of checkpoint folder .* is no longer this process's \(now held by process 777/,
  );
  return true;
};

test('verify() passes while the lock is ours; once taken over it rejects with CHECKPOINT_STORAGE_LOCK_LOST and tells the owner once', async (t) => {
  const root = await folder(t);
  const lost: string[] = [];
  const lock = await CheckpointStorageLock.acquire(root, { log: () => {}, onLost: (why) => lost.push(why), heartbeatMs: 60_000 });
  t.after(() => lock.release());
  await lock.verify();
  await takenOverBy(root, 'new-owner');
  await assert.rejects(lock.verify(), lockLost);
  await assert.rejects(lock.verify(), lockLost);
  assert.equal(lost.length, 1);
  lock.release();
  assert.ok(existsSync(join(root, LOCK_FILE_NAME)), "the new owner's lock stays");
});

test("a storage whose lock was taken over writes no _metadata, _committed or discard; the new owner's lock and files stay", async (t) => {
  const root = await folder(t);
  const storage = new FileSystemCheckpointStorage(root);
  await storage.initialize();
  const lost: string[] = [];
  await storage.lock({ log: () => {}, onLost: (why) => lost.push(why), heartbeatMs: 60_000 });
  const done = storage.checkpointLocation(1);
  await storage.writeState(done, 'map', 0, 'keyed', new Uint8Array([1]));
  await storage.commitMetadata(done, metadataFor(done));
  await storage.verifyLock();

  const location = storage.checkpointLocation(2);
  const keyed = await storage.writeState(location, 'map', 0, 'keyed', new Uint8Array([1, 2, 3]));
  await takenOverBy(root, 'new-owner');
  const metadata = metadataFor(location, [{ uid: 'map', name: 'Map', parallelism: 1, subtasks: [{ subtaskIndex: 0, keyed }] }]);
  await assert.rejects(storage.commitMetadata(location, metadata), lockLost);
  assert.ok(!existsSync(join(location.path, '_metadata')), 'checkpoint 2 does not exist');
  assert.ok(!existsSync(join(location.path, '_metadata.tmp')));
  await assert.rejects(storage.discard(done), lockLost);
  assert.ok(existsSync(join(done.path, '_metadata')), 'nothing of the folder is deleted');
  await assert.rejects(storage.markCommitted(done), lockLost);
  assert.ok(!existsSync(join(done.path, '_committed')));
  await assert.rejects(storage.verifyLock(), lockLost);
  assert.equal(lost.length, 1);
});

test('a _metadata written while the lock was lost (a pause between the check and the write) is taken back', async () => {
  let held = true;
  const lock: StorageLock = {
    release: () => {},
    tookOverFrom: undefined,
    verify: async () => {
      if (!held) throw new WeirError('CHECKPOINT_STORAGE_LOCK_LOST', 'lost');
    },
  };
  const events: string[] = [];
  await assert.rejects(
    fencedWrite(
      lock,
      async () => {
        events.push('write');
        held = false; // taken over while this process was paused right before its write
      },
      async () => {
        events.push('undo');
      },
    ),
    /lost/,
  );
  assert.deepEqual(events, ['write', 'undo']);
  held = false;
  await assert.rejects(
    fencedWrite(
      lock,
      async () => void events.push('never'),
      async () => {},
    ),
    /lost/,
  );
  assert.ok(!events.includes('never'), 'refused before the write');
});

test('a _metadata is never overwritten: a second commit is refused', async (t) => {
  const storage = new FileSystemCheckpointStorage(await folder(t));
  await storage.initialize();
  const location = storage.checkpointLocation(1);
  await storage.commitMetadata(location, metadataFor(location));
  await assert.rejects(storage.commitMetadata(location, metadataFor(location)), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_ALREADY_COMPLETED');
    return true;
  });
});

test('an owner whose clock runs behind (its heartbeat looks minutes old) is not taken over while its heartbeat moves; once it stops, it is', async (t) => {
  const root = await folder(t);
  const behindMs = 120_000;
  await takenOverBy(root, 'skewed-owner', Date.now() - behindMs);
  // The live owner's heartbeat: the file's modification time, set by its own (late) clock.
  const beat = () => {
    const late = new Date(Date.now() - behindMs);
    return utimes(join(root, LOCK_FILE_NAME), late, late).catch(() => {});
  };
  await beat();
  const heartbeat = setInterval(() => void beat(), 40);
  t.after(() => clearInterval(heartbeat));
  const lines: string[] = [];
  await assert.rejects(CheckpointStorageLock.acquire(root, { log: (line) => lines.push(line), staleAfterMs: 400 }), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_STORAGE_LOCKED', String(error));
    assert.match(error.message, /in use by process 777 on host other-host/);
    return true;
  });
  assert.match(lines.join('\n'), /looks stale .*watching it for 0\.4 s/);
  assert.doesNotMatch(lines.join('\n'), /took over/);

  clearInterval(heartbeat);
  const lock = await CheckpointStorageLock.acquire(root, { log: (line) => lines.push(line), staleAfterMs: 400 });
  lock.release();
  assert.match(lines.join('\n'), /took over the lock of checkpoint folder .*: process 777 on host other-host .*did not change in the 0\.4 s watched/);
});
