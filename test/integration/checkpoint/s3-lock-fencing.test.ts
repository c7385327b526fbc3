/**
 * The S3 storage's lock fences the writes that make or unmake checkpoints (issue 32, point 5),
 * against a real S3-compatible server (S3Proxy): a process whose lock was taken over is refused
 * its `_metadata` (no object is left), its discards and its `_committed`, and hears of the loss;
 * a lock whose owner's clock runs behind is not taken over while its heartbeat moves.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3CheckpointStorage } from '../../../src/checkpoint/storage/s3/s3-checkpoint-storage.ts';
import { LOCK_VERSION } from '../../../src/checkpoint/storage/storage-lock.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { metadataFor } from '../../harness/checkpoint-metadata.ts';
import { type S3TestServer, startS3Proxy } from '../../harness/s3-proxy.ts';

let server: S3TestServer;
let client: S3Client;
const bucket = `weir-fence-${randomBytes(4).toString('hex')}`;
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

const keyOf = (path: string) => path.slice(`s3://${bucket}/`.length);
const put = (key: string, body: string) => client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const exists = (key: string) =>
  client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    () => false,
  );
const owner = (id: string, heartbeatAt = Date.now()) =>
  JSON.stringify({ version: LOCK_VERSION, pid: 777, host: 'other-host', startedAt: heartbeatAt, heartbeatAt, id });

test('a storage whose lock was taken over writes no _metadata, _committed or discard, and hears of it', async () => {
  const storage = new S3CheckpointStorage(`s3://${bucket}/jobs/${randomBytes(4).toString('hex')}`);
  await storage.initialize();
  const lost: string[] = [];
  const lock = await storage.lock({ log: () => {}, onLost: (why) => lost.push(why), heartbeatMs: 60_000 });
  const done = storage.checkpointLocation(1);
  await storage.commitMetadata(done, metadataFor(done));
  await storage.verifyLock();

  await put(`${keyOf(storage.root)}/_lock`, owner('new-owner'));
  const lockLost = (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_STORAGE_LOCK_LOST', String(error));
    assert.match(error.message, /the lock of checkpoint storage s3:\/\/.*\/_lock is no longer this process's \(now held by process 777 on host other-host/);
    return true;
  };
  const location = storage.checkpointLocation(2);
  await assert.rejects(storage.commitMetadata(location, metadataFor(location)), lockLost);
  assert.equal(await exists(`${keyOf(location.path)}/_metadata`), false, 'checkpoint 2 does not exist');
  await assert.rejects(storage.discard(done), lockLost);
  assert.equal(await exists(`${keyOf(done.path)}/_metadata`), true, 'checkpoint 1 is not deleted');
  await assert.rejects(storage.markCommitted(done), lockLost);
  assert.equal(lost.length, 1);
  lock.release();
});

test('an owner whose clock runs behind is not taken over while its heartbeat moves; once it stops, it is', async () => {
  const storage = new S3CheckpointStorage(`s3://${bucket}/jobs/${randomBytes(4).toString('hex')}`);
  await storage.initialize();
  const key = `${keyOf(storage.root)}/_lock`;
  // Its heartbeat rewrites the lock (a new ETag each time) with the time of its own clock, 2 minutes late.
  const beat = () => put(key, owner('skewed-owner', Date.now() - 120_000)).catch(() => {});
  await beat();
  const heartbeat = setInterval(() => void beat(), 100);
  const lines: string[] = [];
  try {
    await assert.rejects(storage.lock({ log: (line) => lines.push(line), staleAfterMs: 1500 }), (error: unknown) => {
      assert.ok(error instanceof WeirError && error.code === 'CHECKPOINT_STORAGE_LOCKED', String(error));
      return true;
    });
    assert.match(lines.join('\n'), /looks stale .*watching it for 1\.5 s/);
    assert.doesNotMatch(lines.join('\n'), /took over/);
  } finally {
    clearInterval(heartbeat);
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  const lock = await storage.lock({ log: (line) => lines.push(line), staleAfterMs: 1500 });
  lock.release();
  assert.match(lines.join('\n'), /took over the lock of checkpoint storage .*: process 777 on host other-host .*did not change in the 1\.5 s watched/);
});
