/**
 * Registry settings from the environment (issue 37 point 4): WEIR_SCHEMA_REGISTRY_URL,
 * WEIR_SCHEMA_REGISTRY_USER / _PASSWORD and WEIR_SCHEMA_REGISTRY_CA_LOCATION give what the settings
 * leave out (each on its own, settings first); `schemaRegistry()` with no settings reaches the
 * registry the environment names, with its credentials (checked on a local HTTP server that records
 * the Authorization header); bad combinations are one error naming the variables, and the password
 * shows in no message, hint or JSON.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SchemaRegistryClient, schemaRegistry } from '../../../../src/connectors/schema-registry/schema-registry-client.ts';
import { schemaRegistrySettingsWithEnvironment } from '../../../../src/connectors/schema-registry/schema-registry-settings.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

const PASSWORD = 'env-Pa55-secret';

/** Asserts `run` throws one WeirError matching `pattern` whose message, hint and JSON do not hold the password. */
function refuses(run: () => unknown, pattern: RegExp): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof WeirError, `a WeirError, not ${caught}`);
  assert.match(caught.message, pattern);
  for (const text of [caught.message, caught.hint ?? '', JSON.stringify(caught)]) assert.ok(!text.includes(PASSWORD), text);
}

describe('schema registry settings from the environment', () => {
  let server: Server;
  let url: string;
  let folder: string;
  const seen: (string | undefined)[] = [];
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-registry-env-'));
    server = createServer((request, response) => {
      seen.push(request.headers.authorization);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"compatibilityLevel":"BACKWARD"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await rm(folder, { recursive: true, force: true });
  });

  test('the url and basic auth come from the environment when the settings leave them out', async () => {
    seen.length = 0;
    const env = { WEIR_SCHEMA_REGISTRY_URL: `${url}/`, WEIR_SCHEMA_REGISTRY_USER: 'weir', WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD };
    const client = new SchemaRegistryClient({}, env);
    assert.equal(client.url, url);
    await client.ping();
    assert.deepEqual(seen, [`Basic ${Buffer.from(`weir:${PASSWORD}`).toString('base64')}`]);
    assert.ok(!JSON.stringify(client).includes(PASSWORD) && !String(client).includes(PASSWORD));
  });

  test('schemaRegistry() with no settings reads process.env', async () => {
    seen.length = 0;
    const saved = { ...process.env };
    try {
      process.env.WEIR_SCHEMA_REGISTRY_URL = url;
      process.env.WEIR_SCHEMA_REGISTRY_USER = 'weir';
      process.env.WEIR_SCHEMA_REGISTRY_PASSWORD = PASSWORD;
      const client = schemaRegistry();
      assert.equal(client.url, url);
      await client.ping();
      assert.equal(seen.length, 1);
      assert.ok(seen[0]?.startsWith('Basic '));
    } finally {
      for (const name of ['WEIR_SCHEMA_REGISTRY_URL', 'WEIR_SCHEMA_REGISTRY_USER', 'WEIR_SCHEMA_REGISTRY_PASSWORD']) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });

  test('settings given win over the environment, each on its own', async () => {
    seen.length = 0;
    const env = { WEIR_SCHEMA_REGISTRY_URL: 'http://elsewhere:8081', WEIR_SCHEMA_REGISTRY_USER: 'env-user', WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD };
    const own = new SchemaRegistryClient({ url, basicAuth: { username: 'code', password: 'code-pw' } }, env);
    assert.equal(own.url, url);
    await own.ping();
    assert.deepEqual(seen, [`Basic ${Buffer.from('code:code-pw').toString('base64')}`]);
    // The url in code, the credentials from the environment (as Kafka's WEIR_KAFKA_SASL_PASSWORD with --brokers).
    const merged = schemaRegistrySettingsWithEnvironment({ url }, env);
    assert.deepEqual(merged.basicAuth, { username: 'env-user', password: PASSWORD });
    // No environment at all: the settings as they are.
    assert.deepEqual(schemaRegistrySettingsWithEnvironment({ url }, {}), { url });
  });

  test('the CA file variable gives tls.ca for an https url', async () => {
    const caFile = join(folder, 'ca.pem');
    await writeFile(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const merged = schemaRegistrySettingsWithEnvironment({}, { WEIR_SCHEMA_REGISTRY_URL: 'https://registry:8081', WEIR_SCHEMA_REGISTRY_CA_LOCATION: caFile });
    assert.match(String(merged.tls?.ca), /BEGIN CERTIFICATE/);
    // A CA given in code wins.
    assert.equal(
      schemaRegistrySettingsWithEnvironment({ url: 'https://r', tls: { ca: 'mine' } }, { WEIR_SCHEMA_REGISTRY_CA_LOCATION: caFile }).tls?.ca,
      'mine',
    );
  });

  test("the Kafka client properties file (WEIR_KAFKA_CONFIG, --kafka-config) gives what settings and variables leave out, under Confluent's names", async () => {
    seen.length = 0;
    const caFile = join(folder, 'file-ca.pem');
    await writeFile(caFile, '-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n');
    const properties = join(folder, 'client.properties');
    await writeFile(
      properties,
      `bootstrap.servers=broker:9092\nschema.registry.url=${url}\nbasic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=file-user:${PASSWORD}\nschema.registry.ssl.ca.location=${caFile}\n`,
    );
    const client = new SchemaRegistryClient({}, { WEIR_KAFKA_CONFIG: properties });
    assert.equal(client.url, url);
    await client.ping();
    assert.deepEqual(seen, [`Basic ${Buffer.from(`file-user:${PASSWORD}`).toString('base64')}`]);
    // Variables win over the file, settings over both, each on its own.
    const merged = schemaRegistrySettingsWithEnvironment(
      { url: 'https://code:8081' },
      { WEIR_KAFKA_CONFIG: properties, WEIR_SCHEMA_REGISTRY_USER: 'env', WEIR_SCHEMA_REGISTRY_PASSWORD: 'x' },
    );
    assert.equal(merged.url, 'https://code:8081');
    assert.deepEqual(merged.basicAuth, { username: 'env', password: 'x' });
    assert.match(String(merged.tls?.ca), /MIIC/);
    // Another credentials source is refused by name; a user info without a colon too; the password never shown.
    const other = join(folder, 'other.properties');
    await writeFile(other, `schema.registry.url=${url}\nbasic.auth.credentials.source=SASL_INHERIT\nbasic.auth.user.info=u:${PASSWORD}\n`);
    refuses(() => new SchemaRegistryClient({}, { WEIR_KAFKA_CONFIG: other }), /basic\.auth\.credentials\.source is SASL_INHERIT; Weir reads USER_INFO only/);
    await writeFile(other, `schema.registry.url=${url}\nbasic.auth.user.info=${PASSWORD}\n`);
    refuses(() => new SchemaRegistryClient({}, { WEIR_KAFKA_CONFIG: other }), /basic\.auth\.user\.info is not <user>:<password>/);
  });

  test('bad combinations are one error naming the variables, never the password', () => {
    refuses(() => new SchemaRegistryClient({}, {}), /url is required/);
    try {
      new SchemaRegistryClient({}, {});
    } catch (error) {
      assert.match((error as WeirError).hint ?? '', /WEIR_SCHEMA_REGISTRY_URL/);
    }
    refuses(
      () => new SchemaRegistryClient({}, { WEIR_SCHEMA_REGISTRY_URL: url, WEIR_SCHEMA_REGISTRY_USER: 'weir' }),
      /WEIR_SCHEMA_REGISTRY_USER is set and WEIR_SCHEMA_REGISTRY_PASSWORD is not/,
    );
    refuses(
      () => new SchemaRegistryClient({}, { WEIR_SCHEMA_REGISTRY_URL: url, WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD }),
      /WEIR_SCHEMA_REGISTRY_PASSWORD is set and WEIR_SCHEMA_REGISTRY_USER is not/,
    );
    refuses(
      () => new SchemaRegistryClient({}, { WEIR_SCHEMA_REGISTRY_URL: url, WEIR_SCHEMA_REGISTRY_CA_LOCATION: join(folder, 'ca.pem') }),
      /WEIR_SCHEMA_REGISTRY_CA_LOCATION is set but the url is not https/,
    );
    refuses(
      () =>
        new SchemaRegistryClient(
          {},
          {
            WEIR_SCHEMA_REGISTRY_URL: 'https://registry:8081',
            WEIR_SCHEMA_REGISTRY_CA_LOCATION: join(folder, 'missing.pem'),
            WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD,
            WEIR_SCHEMA_REGISTRY_USER: 'u',
          },
        ),
      /cannot read WEIR_SCHEMA_REGISTRY_CA_LOCATION/,
    );
    // Credentials in the url variable are refused as in settings, without echoing them.
    refuses(() => new SchemaRegistryClient({}, { WEIR_SCHEMA_REGISTRY_URL: `http://weir:${PASSWORD}@registry:8081` }), /url holds credentials/);
  });
});
