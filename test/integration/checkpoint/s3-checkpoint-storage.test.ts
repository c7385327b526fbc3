/**
 * The S3 checkpoint storage against a real S3-compatible server (S3Proxy, started here): the
 * storage contract (write-once state checked by size and SHA-256, `_metadata` last and once,
 * listings, discard metadata first) and the lock (one process per storage, conditional writes,
 * a stale lock taken over, a lost lock reported), plus the errors a user meets (no bucket, wrong
 * credentials, a bad URL).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { CheckpointLocation } from '../../../src/checkpoint/storage/checkpoint-location.ts';
import { CompletedCheckpointStore } from '../../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { openCheckpointStorage, storageFor } from '../../../src/checkpoint/storage/open-checkpoint-storage.ts';
import { openStateWriter } from '../../../src/checkpoint/storage/open-state-writer.ts';
import { S3CheckpointStorage } from '../../../src/checkpoint/storage/s3/s3-checkpoint-storage.ts';
import { LOCK_VERSION } from '../../../src/checkpoint/storage/storage-lock.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { metadataFor } from '../../harness/checkpoint-metadata.ts';
import { assertIncrementalRetention } from '../../harness/incremental-retention.ts';
import { type S3TestServer, startS3Proxy } from '../../harness/s3-proxy.ts';

let server: S3TestServer;
let client: S3Client;
const bucket = `weir-test-${randomBytes(4).toString('hex')}`;
const saved: Record<string, string | undefined> = {};

before(async () => {
  server = await startS3Proxy();
  for (const [name, value] of Object.entries(server.env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  await server.createBucket(bucket);
  client = new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED' });
});
after(async () => {
  client?.destroy();
  await server?.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const fresh = async (): Promise<S3CheckpointStorage> => {
  const storage = new S3CheckpointStorage(`s3://${bucket}/jobs/${randomBytes(4).toString('hex')}`);
  await storage.initialize();
  return storage;
};
const keyOf = (path: string) => path.slice(`s3://${bucket}/`.length);
const put = (key: string, body: string | Uint8Array) => client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));

async function complete(storage: S3CheckpointStorage, checkpointId: number, location = storage.checkpointLocation(checkpointId)): Promise<CheckpointLocation> {
  const keyed = await storage.writeState(location, 'map', 0, 'keyed', new TextEncoder().encode(`state of ${checkpointId}`));
  await storage.commitMetadata(location, metadataFor(location, [{ uid: 'map', name: 'Map', parallelism: 1, subtasks: [{ subtaskIndex: 0, keyed }] }]));
  return location;
}

function weirError(code: string, message: RegExp, hint?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, message);
    if (hint !== undefined) assert.match(error.hint ?? '', hint);
    return true;
  };
}

test('openCheckpointStorage picks S3 for s3:// and refuses a bad URL with the fix', () => {
  assert.ok(openCheckpointStorage(`s3://${bucket}/a/b/`) instanceof S3CheckpointStorage);
  assert.equal(openCheckpointStorage(`s3://${bucket}/a/b/`).root, `s3://${bucket}/a/b`);
  assert.throws(
    () => openCheckpointStorage('s3://Bad_Bucket/x'),
    weirError('INVALID_CHECKPOINT_STORAGE', /is not an S3 location/, /s3:\/\/<bucket>\/<prefix>/),
  );
  assert.throws(() => openCheckpointStorage(`s3://${bucket}/a//b`), weirError('INVALID_CHECKPOINT_STORAGE', /is not an S3 location/));
});

test('state round trip, written once, checked by size and SHA-256', async () => {
  const storage = await fresh();
  const location = storage.checkpointLocation(1);
  assert.deepEqual(location, { kind: 'checkpoint', checkpointId: 1, path: `${storage.root}/chk-1` });
  const bytes = new Uint8Array([1, 2, 3, 250]);
  const handle = await storage.writeState(location, 'a/b c:é', 2, 'operator', bytes);
  assert.equal(handle.path, 'a%2Fb%20c%3A%C3%A9-2.operator');
  assert.deepEqual(new Uint8Array(await storage.readState(location, handle)), bytes);
  assert.deepEqual(new Uint8Array(await storage.readState(`${location.path}/`, handle)), bytes);
  await assert.rejects(storage.writeState(location, 'a/b c:é', 2, 'operator', bytes), weirError('STATE_FILE_EXISTS', /written twice/));
  const key = `${keyOf(location.path)}/${handle.path}`;
  await put(key, new Uint8Array([1, 2, 3, 251]));
  await assert.rejects(storage.readState(location, handle), weirError('STATE_FILE_CORRUPT', /sha256 mismatch/, /another checkpoint/));
  await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  await assert.rejects(storage.readState(location, handle), weirError('STATE_FILE_MISSING', /is missing$/));
});

test('a state file streamed as it is produced: a multipart upload of 8 MiB parts, one PutObject when small; written once; an aborted one leaves nothing', async () => {
  const storage = await fresh();
  const location = storage.checkpointLocation(1);
  // 21 MiB in pieces of 1 MiB and a bit, over several writes: three parts, the last smaller.
  const pieces = Array.from({ length: 20 }, (_, i) => new Uint8Array(new ArrayBuffer(1024 * 1024 + i)).fill(i));
  const whole = Buffer.concat(pieces);
  const file = await openStateWriter(storage, location, 'counts', 0, 'keyed');
  for (let i = 0; i < pieces.length; i += 6) await file.write(pieces.slice(i, i + 6));
  assert.ok(
    pieces.slice(0, 16).every((piece) => piece.byteLength === 0),
    'each piece is freed once its part is uploaded',
  );
  const handle = await file.finish();
  assert.ok(
    pieces.every((piece) => piece.byteLength === 0),
    'and the last part at the end',
  );
  assert.equal(handle.size, whole.byteLength);
  assert.ok(Buffer.from(await storage.readState(location, handle)).equals(whole));
  await assert.rejects(
    (async () => {
      const again = await openStateWriter(storage, location, 'counts', 0, 'keyed');
      await again.write([new Uint8Array(10)]);
      await again.finish();
    })(),
    weirError('STATE_FILE_EXISTS', /written twice/),
  );
  const small = await openStateWriter(storage, location, 'counts', 1, 'keyed');
  await small.write([new Uint8Array([1, 2]), new Uint8Array([3])]);
  assert.deepEqual(new Uint8Array(await storage.readState(location, await small.finish())), new Uint8Array([1, 2, 3]));
  const given = await openStateWriter(storage, location, 'counts', 2, 'keyed');
  await given.write(Array.from({ length: 9 }, () => new Uint8Array(new ArrayBuffer(1024 * 1024))));
  await given.abort();
  const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${keyOf(location.path)}/` }));
  assert.deepEqual((listed.Contents ?? []).map((object) => object.Key?.split('/').pop()).sort(), ['counts-0.keyed', 'counts-1.keyed']);
});

test('_metadata completes a checkpoint once; incomplete and missing locations are told apart', async () => {
  const storage = await fresh();
  const location = storage.checkpointLocation(1);
  await storage.writeState(location, 'map', 0, 'keyed', new Uint8Array([1]));
  assert.equal(await storage.hasMetadata(location), false);
  assert.equal(await new CompletedCheckpointStore(storage).latest(), undefined);
  await assert.rejects(storage.readMetadata(location.path), weirError('CHECKPOINT_NOT_COMPLETED', /no _metadata in .*chk-1/));
  await assert.rejects(storage.readMetadata(`${storage.root}/chk-9`), weirError('CHECKPOINT_NOT_FOUND', /nothing is stored there/));
  await storage.commitMetadata(location, metadataFor(location));
  assert.equal(await storage.hasMetadata(location), true);
  const read = await storage.readMetadata(location.path);
  assert.deepEqual(read, { ...metadataFor(location), location });
  assert.deepEqual(await storage.readMetadata(`${location.path}/_metadata`), read);
  await assert.rejects(storage.commitMetadata(location, metadataFor(location)), weirError('CHECKPOINT_ALREADY_COMPLETED', /already exists/));
  // A restore names the location: any storage of the bucket reads it.
  assert.equal((await storageFor(location.path, undefined).readMetadata(location.path)).checkpointId, 1);
});

test('listings, sizes, savepoints with _committed, subsume and discard (metadata first, savepoints only explicitly)', async () => {
  const storage = await fresh();
  await complete(storage, 1);
  await complete(storage, 3);
  await storage.writeState(storage.checkpointLocation(4), 'map', 0, 'keyed', new Uint8Array(100)); // in progress
  const savepoint = await complete(storage, 2, storage.savepointLocation(2));
  assert.match(savepoint.path, new RegExp(`^${storage.root}/savepoints/savepoint-2-[0-9a-f]{12}$`));
  const all = await new CompletedCheckpointStore(storage).list({ includeSavepoints: true });
  assert.deepEqual(
    all.map((entry) => [entry.checkpointId, entry.location.kind, entry.completed]),
    [
      [1, 'checkpoint', true],
      [2, 'savepoint', true],
      [3, 'checkpoint', true],
      [4, 'checkpoint', false],
    ],
  );
  assert.equal(all[3]?.sizeBytes, 100);
  assert.equal(await storage.isMarkedCommitted(savepoint.path), false);
  await storage.markCommitted(savepoint);
  assert.equal(await storage.isMarkedCommitted(savepoint.path), true);
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), [1]);
  await assert.rejects(storage.discard({ ...savepoint, kind: 'checkpoint' }), weirError('DISCARD_REFUSED', /refusing to delete/));
  await assert.rejects(storage.discard({ kind: 'savepoint', checkpointId: 3, path: savepoint.path }), weirError('DISCARD_REFUSED', /refusing/));
  await storage.discard(savepoint);
  await storage.discard(savepoint); // gone already
  assert.deepEqual(
    (await new CompletedCheckpointStore(storage).list({ includeSavepoints: true })).map((entry) => entry.checkpointId),
    [3, 4],
  );
  assert.equal(await new CompletedCheckpointStore(storage).highestCheckpointId(), 4);
});

test('neighbours are the other prefixes beside the storage, never itself; none at the bucket root', async () => {
  const parent = `jobs/${randomBytes(4).toString('hex')}`;
  const storage = new S3CheckpointStorage(`s3://${bucket}/${parent}/p1-e3`);
  await storage.initialize();
  assert.deepEqual(await storage.neighbours(), []);
  await complete(storage, 1);
  await complete(new S3CheckpointStorage(`s3://${bucket}/${parent}/p1-e0`), 1);
  await put(`${parent}/p1-e1/chk-2/x.keyed`, 'x');
  await put(`${parent}/not-a-folder`, 'x');
  assert.deepEqual((await storage.neighbours()).sort(), [`s3://${bucket}/${parent}/p1-e0`, `s3://${bucket}/${parent}/p1-e1`]);
  assert.deepEqual(await new S3CheckpointStorage(`s3://${bucket}`).neighbours(), []);
});

test('the lock: a second owner is refused naming the first; a stale lock is taken over; a lost lock is reported', async () => {
  const storage = await fresh();
  const lines: string[] = [];
  const first = await storage.lock({ log: (line) => lines.push(line), heartbeatMs: 100 });
  await assert.rejects(
    storage.lock({ log: () => {} }),
    weirError('CHECKPOINT_STORAGE_LOCKED', new RegExp(`is in use by process ${process.pid} on host`), /one job|another checkpointing\.storage/),
  );
  first.release();
  // Released (asynchronously): the next one gets it.
  let second: Awaited<ReturnType<S3CheckpointStorage['lock']>> | undefined;
  for (let i = 0; i < 50 && second === undefined; i++) {
    second = await storage.lock({ log: () => {} }).catch(() => undefined);
    if (second === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(second !== undefined, 'the lock was released');
  second.release();
  await new Promise((resolve) => setTimeout(resolve, 300));

  // A lock of a process that died on another host, silent for long: taken over, and said so.
  const key = `${keyOf(storage.root)}/_lock`;
  const dead = { version: LOCK_VERSION, pid: 1, host: 'gone-host', startedAt: 0, heartbeatAt: Date.now() - 120_000, id: 'dead' };
  await put(key, JSON.stringify(dead));
  const taken: string[] = [];
  const lost: string[] = [];
  const third = await storage.lock({ log: (line) => taken.push(line), onLost: (why) => lost.push(why), heartbeatMs: 100, staleAfterMs: 1000 });
  assert.match(taken.join('\n'), /took over the lock of checkpoint storage .*: process 1 on host gone-host .*heartbeat stopped 12\d s ago/);
  const owner = JSON.parse(await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString()) as { pid: number };
  assert.equal(owner.pid, process.pid);
  // Someone else overwrites it: the owner's next heartbeat finds out and reports it.
  await put(key, JSON.stringify({ ...dead, host: 'thief', heartbeatAt: Date.now(), id: 'thief' }));
  for (let i = 0; i < 50 && lost.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.match(lost[0] ?? '', /is no longer this process's \(now held by process 1 on host thief/);
  third.release();
});

test('a missing bucket and wrong credentials are clear errors naming the fix', async () => {
  await assert.rejects(
    new S3CheckpointStorage('s3://no-such-bucket-here/x').initialize(),
    weirError('CHECKPOINT_STORAGE_FAILED', /the bucket "no-such-bucket-here" does not exist/, /create the bucket/),
  );
  const secret = process.env.AWS_SECRET_ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = 'wrong';
  try {
    await assert.rejects(new S3CheckpointStorage(`s3://${bucket}/x`).initialize(), (error: unknown) => {
      assert.ok(error instanceof WeirError);
      assert.match(error.hint ?? '', /check the AWS credentials/);
      assert.ok(!error.message.includes('wrong'), 'the secret is not in the message');
      return true;
    });
  } finally {
    process.env.AWS_SECRET_ACCESS_KEY = secret;
  }
});

test("a base that lands in its checkpoint's folder after the checkpoint was aborted and discarded is deleted by the next subsume: no orphan stays", async () => {
  // A disk backend's base written beside the chain (a multipart upload) that completes just as its
  // checkpoint is aborted: the discard listed the folder before the object existed.
  const storage = await fresh();
  await complete(storage, 1);
  const aborted = storage.checkpointLocation(2);
  const base = await openStateWriter(storage, aborted, 'counts', 0, 'keyed-base');
  await base.write(Array.from({ length: 9 }, () => new Uint8Array(new ArrayBuffer(1024 * 1024)).fill(7)));
  await storage.discard(aborted);
  await base.finish();
  const objectsOf = async (location: CheckpointLocation) =>
    ((await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${keyOf(location.path)}/` }))).Contents ?? []).map((object) =>
      object.Key?.split('/').pop(),
    );
  assert.deepEqual(await objectsOf(aborted), ['counts-0.keyed-base'], 'the base outlived the discard');
  await complete(storage, 3);
  assert.deepEqual(await new CompletedCheckpointStore(storage).subsume(1), [1, 2]);
  assert.deepEqual(await objectsOf(aborted), []);
  assert.deepEqual(
    (await new CompletedCheckpointStore(storage).list()).map((entry) => entry.checkpointId),
    [3],
  );
});

test('incremental checkpoints on S3: a handle in an earlier checkpoint reads from its folder; subsume keeps what a kept checkpoint names', async () => {
  await assertIncrementalRetention(await fresh());
});
