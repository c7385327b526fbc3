import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const protocol = join(import.meta.dirname, '..', '..', '..', '..', 'src', 'connectors', 'kafka', 'kafka-protocol.ts');

/** Runs `body` in a fresh process (module hooks are per thread) that logs every module it loads; returns its JSON output. */
function inFreshProcess(body: string): { loaded: string[]; [key: string]: unknown } {
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
    const protocol = await import(${JSON.stringify(protocol)});
    const out = { loaded };
    ${body}
    process.stdout.write(JSON.stringify(out));
  `;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
}

test("the client's connection loads without its whole API barrel; Weir's API versions are there", () => {
  const out = inFreshProcess(`
    out.apis = ['produceV11', 'fetchV17', 'describeConfigsV4', 'saslHandshakeV1'].map((name) => typeof protocol[name]?.api?.async);
    out.pool = typeof protocol.ConnectionPool;
  `);
  const apiModules = out.loaded.filter((url) => /@platformatic\/kafka\/dist\/apis\/(admin|consumer|metadata|producer|security|telemetry)\//.test(url));
  assert.ok(!out.loaded.some((url) => url.endsWith('@platformatic/kafka/dist/apis/index.js')), 'the whole barrel was loaded');
  assert.ok(apiModules.length > 20 && apiModules.length < 60, `${apiModules.length} API modules loaded`);
  assert.deepEqual(out.apis, ['function', 'function', 'function', 'undefined']); // saslHandshakeV1 is the connection's, not exported by Weir
  assert.equal(out.pool, 'function');
});

test("the client's connection loads without the protocol barrel (murmur2's LRU library) and without compiling the client options", () => {
  const out = inFreshProcess(`
    out.pool = typeof protocol.ConnectionPool;
    out.crc = typeof protocol.crc32c;
  `);
  const loaded = (path: string) => out.loaded.some((url) => url.endsWith(`@platformatic/kafka/dist/${path}`));
  assert.ok(!loaded('protocol/index.js'), 'the protocol barrel was loaded');
  assert.ok(!loaded('protocol/murmur2.js'), 'murmur2 was loaded');
  assert.ok(!out.loaded.some((url) => url.includes('/node_modules/mnemonist/')), 'mnemonist was loaded');
  assert.ok(!loaded('clients/base/options.js'), "the client's options (two ajv compiles) were loaded");
  assert.ok(loaded('protocol/sasl/plain.js') && loaded('protocol/sasl/scram-sha.js'), 'the SASL helpers are there');
  assert.deepEqual([out.pool, out.crc], ['function', 'function']);
});

test('a job that imports the client itself still gets all of it', () => {
  const out = inFreshProcess(`
    const kafka = await import('@platformatic/kafka');
    out.admin = typeof kafka.Admin;
    out.acls = typeof kafka.describeAclsV3?.api;
    out.same = kafka.produceV11 === protocol.produceV11 || kafka.produceV11.api === protocol.produceV11.api;
  `);
  assert.deepEqual([out.admin, out.acls, out.same], ['function', 'function', true]);
});
