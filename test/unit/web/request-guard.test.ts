import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { guardRequest, isLoopback } from '../../../src/web/request-guard.ts';

function request(method: string, headers: Record<string, string>): IncomingMessage {
  return { method, headers } as unknown as IncomingMessage;
}

const loopback = { host: '127.0.0.1', token: undefined };

test('loopback addresses and names', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'app.localhost', '::1', '[::1]', 'LOCALHOST']) assert.ok(isLoopback(host), host);
  for (const host of ['0.0.0.0', '10.0.0.1', '::', 'evil.example', '128.0.0.1', '']) assert.ok(!isLoopback(host), host);
});

test('POSTs from the own origin, from no browser, or navigated to directly go on; cross-site and same-site ones are refused', () => {
  const own = { host: '127.0.0.1:8081' };
  assert.equal(guardRequest(request('POST', own), '/api/stop', loopback), undefined);
  assert.equal(guardRequest(request('POST', { ...own, origin: 'http://127.0.0.1:8081', 'sec-fetch-site': 'same-origin' }), '/api/stop', loopback), undefined);
  assert.equal(guardRequest(request('POST', { ...own, 'sec-fetch-site': 'none' }), '/api/stop', loopback), undefined);
  const foreign: Record<string, string>[] = [
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site' },
    { origin: 'http://127.0.0.1:3000' },
    { origin: 'null' },
  ];
  for (const headers of foreign) {
    assert.equal(guardRequest(request('POST', { ...own, ...headers }), '/api/stop', loopback)?.status, 403, JSON.stringify(headers));
  }
  // GETs are not checked for their origin (a cross-site page cannot read the answer).
  assert.equal(guardRequest(request('GET', { ...own, 'sec-fetch-site': 'cross-site' }), '/api/job', loopback), undefined);
});

test('on loopback, a Host header of another name (DNS rebinding) is refused; elsewhere any Host is served', () => {
  assert.equal(guardRequest(request('GET', { host: 'evil.example:8081' }), '/api/job', loopback)?.status, 403);
  assert.equal(guardRequest(request('GET', { host: 'localhost:8081' }), '/api/job', loopback), undefined);
  assert.equal(guardRequest(request('GET', { host: '[::1]:8081' }), '/api/job', loopback), undefined);
  assert.equal(guardRequest(request('GET', { host: 'job.internal:8081' }), '/api/job', { host: '0.0.0.0', token: undefined }), undefined);
});

test('with a token, /api and /metrics need it; /health and the page do not', () => {
  const options = { host: '0.0.0.0', token: 's3cret' };
  const host = { host: 'job.internal:8081' };
  assert.equal(guardRequest(request('GET', host), '/api/job', options)?.status, 401);
  assert.equal(guardRequest(request('GET', { ...host, authorization: 'Bearer nope' }), '/metrics', options)?.status, 401);
  assert.equal(guardRequest(request('GET', { ...host, authorization: 'Bearer s3cret' }), '/api/job', options), undefined);
  assert.equal(guardRequest(request('POST', { ...host, authorization: 'bearer s3cret' }), '/api/stop', options), undefined);
  assert.equal(guardRequest(request('GET', host), '/health', options), undefined);
  assert.equal(guardRequest(request('GET', host), '/health/ready', options), undefined);
  assert.equal(guardRequest(request('GET', host), '/', options), undefined);
  assert.ok(!JSON.stringify(guardRequest(request('GET', host), '/api/job', options)).includes('s3cret'), 'the answer never shows the token');
});
