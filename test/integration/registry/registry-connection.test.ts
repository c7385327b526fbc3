/**
 * Registry connection settings against the real registry (Apicurio): over TLS (it serves https
 * only, with a certificate of the test CA), Weir's client trusts it through `tls.ca`, and refuses
 * it, with a clear error, without; behind basic authentication (a proxy that checks the
 * Authorization header in front of the registry, as a deployment puts one), the right credentials
 * work on the asynchronous and on the synchronous path, wrong ones are a 401 the preflight names,
 * and the password shows in no message, hint or JSON of the client.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { TopicRecord } from '../../../src/connectors/kafka/topic-record.ts';
import { avroDeserializer } from '../../../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../../../src/connectors/schema-registry/avro-serializer.ts';
import { SchemaRegistryClient } from '../../../src/connectors/schema-registry/schema-registry-client.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';
import { makeTestCertificates } from '../../harness/test-certificates.ts';

const run = promisify(execFile);
const schema = { type: 'record', name: 'Reading', namespace: 'dev.weir.test', fields: [{ name: 'v', type: 'long' }] };
const record = (value: Buffer): TopicRecord => ({ topic: 't', partition: 0, offset: 0n, timestamp: 0n, key: null, value, headers: [], producerId: -1n });
const PASSWORD = 'pa55-Weir-secret';

/** The basic-auth proxy: 401 unless the Authorization header is the expected one, else forwards to the registry over TLS. */
const PROXY = `
const http = require('node:http');
const https = require('node:https');
const { parentPort, workerData } = require('node:worker_threads');
const { target, ca, expected } = workerData;
const server = http.createServer((request, response) => {
  if (request.headers.authorization !== expected) {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":40101,"message":"Unauthorized"}');
    return;
  }
  const url = new URL(target + (request.url || '').replace(/^\\/registry/, ''));
  const forward = https.request(url, { method: request.method, headers: request.headers['content-type'] ? { 'content-type': request.headers['content-type'] } : {}, ca }, (answer) => {
    response.writeHead(answer.statusCode || 502, answer.headers);
    answer.pipe(response);
  });
  forward.on('error', () => response.writeHead(502).end());
  request.pipe(forward);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

describe('registry connection settings (TLS, basic auth) against the real registry', () => {
  let folder: string;
  let server: SchemaRegistryServer;
  let ca: string;
  let otherCa: string;
  let proxy: Worker;
  let proxyUrl: string;
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-registry-tls-'));
    const certificates = await makeTestCertificates(folder);
    const keyFile = join(folder, 'broker-key.pem');
    await run('openssl', [
      'pkcs12',
      '-in',
      certificates.brokerKeystore,
      '-nocerts',
      '-nodes',
      '-passin',
      `pass:${certificates.storePassword}`,
      '-out',
      keyFile,
    ]);
    server = await startSchemaRegistry({ tls: { certFile: join(folder, 'broker.pem'), keyFile, caFile: certificates.caPem } });
    ca = await readFile(certificates.caPem, 'utf8');
    otherCa = await readFile(certificates.otherCaPem, 'utf8');
    // Basic authentication in front of the registry, forwarding to it over TLS. In a thread of its
    // own: the synchronous path blocks this one while it waits for the answer.
    proxy = new Worker(PROXY, { eval: true, workerData: { target: server.url, ca, expected: `Basic ${Buffer.from(`weir:${PASSWORD}`).toString('base64')}` } });
    const port = await new Promise<number>((resolve, reject) => {
      proxy.once('message', resolve);
      proxy.once('error', reject);
    });
    proxyUrl = `http://127.0.0.1:${port}/registry`;
  });
  after(async () => {
    await proxy?.terminate();
    await server?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  test('TLS: trusted through tls.ca (async and synchronous paths); another CA or none is refused, clearly', async () => {
    assert.match(server.url, /^https:/);
    const registry = new SchemaRegistryClient({ url: server.url, tls: { ca } });
    const serializer = avroSerializer<{ v: number }>({ registry, schema, topic: 'tls', autoRegister: true });
    const bytes = serializer({ v: 42 }); // registers on first use: the synchronous path, over TLS
    const deserializer = avroDeserializer<{ v: number }>({ registry: { url: server.url, tls: { ca } } }); // its own cache: the synchronous fetch by id
    assert.deepEqual({ ...deserializer(record(bytes)) }, { v: 42 });
    assert.deepEqual(await deserializer.preflight('source'), []);

    for (const settings of [
      { url: server.url, retryTimeout: 0 },
      { url: server.url, tls: { ca: otherCa }, retryTimeout: 0 },
    ]) {
      const [finding] = await avroDeserializer({ registry: settings }).preflight('kafka source "in"');
      assert.match(
        finding?.message ?? '',
        /kafka source "in": schema registry https:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7: GET \/config unreachable: .*(self-signed|unable to verify|certificate)/i,
      );
    }
  });

  test('basic auth: the right credentials work; wrong ones are a 401 named; the password is never shown', async () => {
    const good = new SchemaRegistryClient({ url: proxyUrl, basicAuth: { username: 'weir', password: PASSWORD } });
    const serializer = avroSerializer<{ v: number }>({ registry: good, schema, topic: 'auth', autoRegister: true });
    await serializer.prepare();
    const deserializer = avroDeserializer<{ v: number }>({ registry: { url: proxyUrl, basicAuth: { username: 'weir', password: PASSWORD } } });
    assert.deepEqual({ ...deserializer(record(serializer({ v: 7 }))) }, { v: 7 }, 'the synchronous fetch by id sends the credentials too');

    const wrong = new SchemaRegistryClient({ url: proxyUrl, basicAuth: { username: 'weir', password: 'not-the-password' } });
    const findings = [
      ...(await avroDeserializer({ registry: wrong }).preflight('kafka source "in"')),
      ...(await avroSerializer({ registry: wrong, schema, topic: 'auth' }).preflight('kafka sink "out"')),
    ];
    assert.equal(findings.length, 2);
    for (const finding of findings) {
      assert.match(finding.message, /answered 401 \(not authorized\)/);
      assert.match(finding.hint ?? '', /check basicAuth/);
    }
    const shown = `${JSON.stringify(findings)} ${JSON.stringify(good)} ${String(good)} ${JSON.stringify(wrong)}`;
    for (const secret of [PASSWORD, 'not-the-password', Buffer.from(`weir:${PASSWORD}`).toString('base64')]) assert.ok(!shown.includes(secret), shown);
  });
});
