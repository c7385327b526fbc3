import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { S3Objects } from '../../../../src/checkpoint/storage/s3/s3-objects.ts';

/**
 * An S3 server that accepts a request and never answers (a stalled S3Proxy, a half-open
 * connection) fails the request once its socket was idle for the timeout, and the SDK's retries
 * end in a clear error, instead of a checkpoint waiting forever (the SDK's default has no timeout).
 */
test('a request an S3 server never answers fails after the socket timeout and the retries', async (t) => {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket); // read and never answer
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const saved = { ...process.env };
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: 'us-east-1',
    WEIR_S3_SOCKET_TIMEOUT_MS: '300',
  });
  const objects = new S3Objects('stalled');
  t.after(() => {
    objects.close();
    for (const socket of sockets) socket.destroy();
    server.close();
    process.env = saved;
  });
  const started = performance.now();
  await assert.rejects(objects.get('chk-1/state'), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'CHECKPOINT_READ_FAILED');
    return true;
  });
  const took = performance.now() - started;
  assert.ok(sockets.length >= 2, `the SDK retried (${sockets.length} connections)`);
  assert.ok(took < 30_000, `failed in ${Math.round(took)} ms`);
});
