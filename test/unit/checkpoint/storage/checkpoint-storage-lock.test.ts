import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { CheckpointStorageLock, LOCK_FILE_NAME, LOCK_VERSION, type LockOwner } from '../../../../src/checkpoint/storage/checkpoint-storage-lock.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

async function folder(t: TestContext): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'weir-lock-'));
  t.after(() => rm(path, { recursive: true, force: true }));
  return path;
}

/** A pid that is not running: a child that has exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

function ownerFile(owner: Partial<LockOwner>): string {
  const now = Date.now();
  return JSON.stringify({ version: LOCK_VERSION, pid: 1, host: 'elsewhere', startedAt: now, heartbeatAt: now, id: 'feedfeedfeedfeed', ...owner });
}

test('the lock file names the owner (versioned JSON) and goes on release; a second taker is refused with pid and host', async (t) => {
  const root = await folder(t);
  const lines: string[] = [];
  const lock = await CheckpointStorageLock.acquire(root, { log: (line) => lines.push(line) });
  const owner = JSON.parse(await readFile(join(root, LOCK_FILE_NAME), 'utf8')) as LockOwner;
  assert.equal(owner.version, LOCK_VERSION);
  assert.equal(owner.pid, process.pid);
  assert.equal(owner.host, hostname());
  await assert.rejects(CheckpointStorageLock.acquire(root, { log: () => {} }), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_STORAGE_LOCKED');
    assert.match(error.message, new RegExp(`in use by process ${process.pid} on host ${hostname().replace(/\./g, '\\.')}`));
    assert.match(error.hint ?? '', /stop the other job .*--checkpoint-storage/);
    return true;
  });
  lock.release();
  assert.ok(!existsSync(join(root, LOCK_FILE_NAME)));
  assert.deepEqual(readdirSync(root), [], 'no temporary files left');
  (await CheckpointStorageLock.acquire(root, { log: () => {} })).release();
  assert.deepEqual(lines, []);
});

test('a lock of a dead pid on this host is taken over, and logged', async (t) => {
  const root = await folder(t);
  const pid = deadPid();
  await writeFile(join(root, LOCK_FILE_NAME), ownerFile({ pid, host: hostname() }));
  const lines: string[] = [];
  const lock = await CheckpointStorageLock.acquire(root, { log: (line) => lines.push(line) });
  t.after(() => lock.release());
  assert.equal((JSON.parse(await readFile(join(root, LOCK_FILE_NAME), 'utf8')) as LockOwner).pid, process.pid);
  assert.match(lines.join('\n'), new RegExp(`took over the lock of checkpoint folder .*: process ${pid} on host .*, which is no longer running`));
});

test('another host: refused while its heartbeat is fresh, taken over once it is stale', async (t) => {
  const root = await folder(t);
  await writeFile(join(root, LOCK_FILE_NAME), ownerFile({ pid: 4242, host: 'other-host' }));
  await assert.rejects(CheckpointStorageLock.acquire(root, { log: () => {} }), /in use by process 4242 on host other-host/);
  await writeFile(join(root, LOCK_FILE_NAME), ownerFile({ pid: 4242, host: 'other-host', heartbeatAt: Date.now() - 120_000 }));
  // Its heartbeat, the file's modification time, stopped as long ago.
  const stopped = new Date(Date.now() - 120_000);
  await utimes(join(root, LOCK_FILE_NAME), stopped, stopped);
  // Stale by its clock: watched for the staleness on this process's own clock, then taken over.
  const lines: string[] = [];
  const lock = await CheckpointStorageLock.acquire(root, { log: (line) => lines.push(line), staleAfterMs: 300 });
  lock.release();
  assert.match(lines.join('\n'), /looks stale \(process 4242 on host other-host .*heartbeat 120 s old by its clock\): watching it for 0\.3 s/);
  assert.match(lines.join('\n'), /process 4242 on host other-host .*whose heartbeat stopped 120 s ago by its clock, and did not change in the 0\.3 s watched/);
});

test('the owner refreshes its heartbeat; an owner whose lock was taken over hears of it', async (t) => {
  const root = await folder(t);
  const lost: string[] = [];
  const lock = await CheckpointStorageLock.acquire(root, { log: () => {}, onLost: (why) => lost.push(why), heartbeatMs: 20 });
  t.after(() => lock.release());
  // The heartbeat is the lock file's modification time (its content is written once).
  const content = await readFile(join(root, LOCK_FILE_NAME), 'utf8');
  await utimes(join(root, LOCK_FILE_NAME), new Date(0), new Date(0));
  const deadline = Date.now() + 10_000;
  while ((await stat(join(root, LOCK_FILE_NAME))).mtimeMs === 0) {
    assert.ok(Date.now() < deadline, 'the heartbeat was not refreshed');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(await readFile(join(root, LOCK_FILE_NAME), 'utf8'), content, 'the heartbeat leaves the content alone');
  // Taken over as another process does it: its lock file appears whole (written aside, then renamed over).
  await writeFile(join(root, `${LOCK_FILE_NAME}.other`), ownerFile({ pid: 777, host: 'other-host' }));
  await rename(join(root, `${LOCK_FILE_NAME}.other`), join(root, LOCK_FILE_NAME));
  while (lost.length === 0) {
    assert.ok(Date.now() < deadline, 'the loss was not noticed');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.match(lost[0] as string, /no longer this process's \(now held by process 777 on host other-host/);
  lock.release();
  assert.ok(existsSync(join(root, LOCK_FILE_NAME)), "release never deletes another owner's lock");
});

test('a lock file that does not read is refused, naming the file', async (t) => {
  const root = await folder(t);
  await writeFile(join(root, LOCK_FILE_NAME), 'not json');
  await assert.rejects(CheckpointStorageLock.acquire(root, { log: () => {} }), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_STORAGE_LOCKED');
    assert.match(error.hint ?? '', /delete .*_lock/);
    return true;
  });
});
