/**
 * Avro in the Schema Registry wire format, against a real registry (Apicurio, started by the
 * harness): Weir's deserializer reads what the reference client (@kafkajs/confluent-schema-registry)
 * writes and the reference client reads what Weir's serializer writes; bad messages (wrong magic
 * byte, unknown id, a payload that does not decode) throw, naming what is wrong; schemas are
 * cached by id (after the registry is stopped, known ids still decode); prepare() fetches a batch's
 * unknown ids at once; the serializer's subject strategies, its preflight (not registered,
 * incompatible under the subject's rule) and settings that keep secrets out of messages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { avroDeserializer } from '../../../../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../../../../src/connectors/schema-registry/avro-serializer.ts';
import { SchemaRegistryClient, schemaRegistry } from '../../../../src/connectors/schema-registry/schema-registry-client.ts';
import { readSchemaId } from '../../../../src/connectors/schema-registry/wire-format.ts';
import { withSchemaRegistry } from '../../../../src/connectors/schema-registry/with-schema-registry.ts';
import { freePort } from '../../../../src/local-kafka/ports.ts';
import { topicRecord as record } from '../../../harness/registry-fixture.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../../harness/schema-registry.ts';

interface Order {
  id: number;
  amount: number;
  note: string;
}
const orderV1 = {
  type: 'record',
  name: 'Order',
  namespace: 'dev.weir.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'amount', type: 'double' },
  ],
};
const orderV2 = { ...orderV1, fields: [...orderV1.fields, { name: 'note', type: 'string', default: 'none' }] };

describe('Avro in the registry wire format (a real Schema Registry)', () => {
  let server: SchemaRegistryServer;
  let reference: SchemaRegistry;
  before(async () => {
    server = await startSchemaRegistry();
    reference = new SchemaRegistry({ host: server.url });
  });
  after(async () => {
    await server?.stop();
  });

  test('reads what the reference client writes, and writes what it reads', async () => {
    const { id } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV2) }, { subject: 'orders-value' });
    const written = await reference.encode(id, { id: 7, amount: 12.5, note: 'hi' });
    const deserializer = avroDeserializer<Order>({ registry: { url: server.url } });
    assert.deepEqual({ ...deserializer(record(written)) }, { id: 7, amount: 12.5, note: 'hi' });

    const serializer = avroSerializer<Order>({ registry: { url: server.url }, schema: orderV2, topic: 'orders' });
    assert.equal(serializer.subject, 'orders-value');
    assert.equal(await serializer.prepare(), id, 'the id of the schema under its subject');
    const bytes = serializer({ id: 8, amount: 1.25, note: 'x' });
    assert.equal(bytes[0], 0);
    assert.equal(bytes.readInt32BE(1), id);
    assert.deepEqual({ ...(await reference.decode(bytes)) }, { id: 8, amount: 1.25, note: 'x' });
    assert.throws(() => serializer({ id: 'nine', amount: 1, note: 'x' } as unknown as Order), /invalid "long": "nine"/);
  });

  test("keys: isKey names the subject <topic>-key and decodes the record's key", async () => {
    const registry = schemaRegistry({ url: server.url });
    const keys = avroSerializer<number>({ registry, schema: 'long', topic: 'keyed', isKey: true, autoRegister: true });
    assert.equal(keys.subject, 'keyed-key');
    const key = keys(41);
    const values = avroSerializer<Order>({ registry, schema: orderV2, topic: 'keyed', autoRegister: true });
    const message = { ...record(values({ id: 41, amount: 1, note: 'n' })), key };
    assert.equal(avroDeserializer<number>({ registry, isKey: true })(message), 41);
    assert.equal(avroDeserializer<Order>({ registry })(message).note, 'n');
    assert.equal((await server.request<{ schema: string }>('GET', '/subjects/keyed-key/versions/latest')).body.schema, '"long"');
  });

  test('a wrong magic byte, an unknown id, a payload that does not decode: each throws, naming what is wrong', async () => {
    const { id } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV1) }, { subject: 'bad-value' });
    const good = await reference.encode(id, { id: 1, amount: 2 });
    const deserializer = avroDeserializer<Order>({ registry: { url: server.url } });
    const wrongMagic = Buffer.from(good);
    wrongMagic[0] = 1;
    assert.throws(() => deserializer(record(wrongMagic)), /unknown magic byte 1/);
    assert.throws(() => deserializer(record(Buffer.from('{"id":1}'))), /unknown magic byte 123/);
    assert.throws(() => deserializer(record(null)), /no bytes/);
    const unknown = Buffer.from(good);
    unknown.writeInt32BE(987654, 1);
    assert.throws(() => deserializer(record(unknown)), /schema id 987654 is unknown to schema registry http:\/\/127\.0\.0\.1:\d+/);
    assert.throws(() => deserializer(record(good.subarray(0, good.length - 3))), /truncated/);
    assert.throws(() => deserializer(record(Buffer.concat([good, Buffer.from([1, 2])]))), /2 bytes after its record/);
    const { id: jsonId } = await reference.register(
      { type: SchemaType.JSON, schema: JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } } }) },
      { subject: 'json-value' },
    );
    const json = await reference.encode(jsonId, { a: 1 });
    assert.throws(() => deserializer(record(json)), new RegExp(`schema id ${jsonId} is a JSON schema, not Avro`));
    assert.deepEqual({ ...deserializer(record(good)) }, { id: 1, amount: 2 }, 'a good record still decodes');
  });

  test('a reader schema resolves records of older writer schemas (a new field takes its default)', async () => {
    const { id } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV1) }, { subject: 'evolve-value' });
    const deserializer = avroDeserializer<Order>({ registry: { url: server.url }, readerSchema: orderV2 });
    assert.deepEqual({ ...deserializer(record(await reference.encode(id, { id: 3, amount: 4 }))) }, { id: 3, amount: 4, note: 'none' });
  });

  test('subject name strategies, and the serializer refusing an unregistered schema unless autoRegister', async () => {
    const registry = schemaRegistry({ url: server.url });
    const named = (subjectStrategy: 'topic' | 'record' | 'topic-record', isKey = false) =>
      avroSerializer({ registry, schema: orderV1, topic: 'sales', subjectStrategy, isKey }).subject;
    assert.equal(named('topic'), 'sales-value');
    assert.equal(named('topic', true), 'sales-key');
    assert.equal(named('record'), 'dev.weir.test.Order');
    assert.equal(named('topic-record'), 'sales-dev.weir.test.Order');
    assert.throws(() => avroSerializer({ registry, schema: orderV1 }), /no topic is given/);
    assert.throws(() => avroSerializer({ registry, schema: 'long', subjectStrategy: 'record' }), /not a named record/);

    const off = avroSerializer<Order>({ registry, schema: orderV1, topic: 'fresh' });
    await assert.rejects(off.prepare(), /subject "fresh-value" does not hold the schema dev\.weir\.test\.Order the sink writes \(autoRegister is off\)/);
    assert.throws(() => off({ id: 1, amount: 1, note: '' }), /autoRegister is off/, 'the synchronous first use refuses it too');
    const [finding] = await off.preflight('kafka sink "out"');
    assert.match(finding?.message ?? '', /kafka sink "out": .*subject "fresh-value" does not hold the schema/);

    const on = avroSerializer<Order>({ registry, schema: orderV1, topic: 'fresh', autoRegister: true });
    assert.deepEqual(await on.preflight('sink'), []);
    const bytes = on({ id: 1, amount: 1, note: '' }); // registered on first use, synchronously
    const versions = await server.request<{ id: number }>('GET', '/subjects/fresh-value/versions/latest');
    assert.equal(readSchemaId(bytes), versions.body.id);
    assert.deepEqual(await off.preflight('sink'), [], 'registered now');
  });

  test("withSchemaRegistry: the sink's operator looks the serializer's id up as it opens (no record waits on the registry)", async () => {
    const registry = schemaRegistry({ url: server.url });
    await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV1) }, { subject: 'opened-value' });
    const serializer = avroSerializer<Order>({ registry, schema: orderV1, topic: 'opened' });
    const opened: string[] = [];
    const sink = withSchemaRegistry(
      {
        name: 'a sink',
        preflight: async () => [],
        createOperator: () => ({ open: async (_context: unknown) => void opened.push(`open with id ${serializer.schemaId}`) }),
      },
      serializer,
    );
    assert.equal(serializer.schemaId, undefined);
    await sink.createOperator().open(undefined as never);
    assert.deepEqual(opened, [`open with id ${serializer.schemaId}`]);
    assert.equal(typeof serializer.schemaId, 'number', 'looked up before the operator opened');
  });

  test("the preflight refuses a schema the subject's compatibility rule rejects, naming the subject and the rule", async () => {
    const registry = schemaRegistry({ url: server.url });
    await registry.register('rule-value', JSON.stringify(orderV2), 'AVRO');
    await server.request('PUT', '/config/rule-value', { compatibility: 'BACKWARD' });
    const changedType = { ...orderV1, fields: [{ name: 'id', type: 'string' }] };
    const findings = await avroSerializer({ registry, schema: changedType, topic: 'rule', autoRegister: true }).preflight('kafka sink "out"');
    assert.equal(findings.length, 1, JSON.stringify(findings));
    assert.match(findings[0]?.message ?? '', /breaks subject "rule-value"'s compatibility rule BACKWARD/);
    assert.match(findings[0]?.hint ?? '', /BACKWARD-compatible/);
  });

  test('prepare() fetches the unknown ids of a batch at once; then no promise', async () => {
    const { id: a } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV1) }, { subject: 'prep-a-value' });
    const { id: b } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify({ ...orderV1, name: 'Other' }) }, { subject: 'prep-b-value' });
    const registry = schemaRegistry({ url: server.url });
    const deserializer = avroDeserializer<Order>({ registry });
    const batch = [record(await reference.encode(a, { id: 1, amount: 1 })), record(await reference.encode(b, { id: 2, amount: 2 })), record(Buffer.from('x'))];
    const pending = deserializer.prepare(batch);
    assert.ok(pending instanceof Promise);
    await pending;
    assert.ok(registry.cached(a) !== undefined && registry.cached(b) !== undefined);
    assert.equal(deserializer.prepare(batch), undefined, 'every id cached: no promise');
  });

  test('schemas are cached by id: with the registry stopped, known ids still decode; an unknown one is a clear error', async () => {
    const { id } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderV1) }, { subject: 'cache-value' });
    const deserializer = avroDeserializer<Order>({ registry: { url: server.url, retryTimeout: 300 } });
    const messages = await Promise.all(Array.from({ length: 1000 }, (_, i) => reference.encode(id, { id: i, amount: i / 2 })));
    assert.equal(deserializer(record(messages[0] as Buffer)).id, 0);
    await server.stop();
    const decoded = messages.map((message) => deserializer(record(message)).id);
    assert.deepEqual(
      decoded,
      Array.from({ length: 1000 }, (_, i) => i),
    );
    const other = Buffer.from(messages[0] as Buffer);
    other.writeInt32BE(id + 1000, 1);
    assert.throws(
      () => deserializer(record(other)),
      /schema registry http:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7: GET \/schemas\/ids\/\d+ unreachable: .*ECONNREFUSED/,
    );
  });
});

describe('registry settings', () => {
  test('credentials never show in errors; bad settings name the setting and the fix', async () => {
    const port = await freePort();
    const registry = new SchemaRegistryClient({
      url: `http://127.0.0.1:${port}`,
      basicAuth: { username: 'weir', password: 's3cret-pass' },
      retryTimeout: 200,
    });
    const secrets = [/s3cret-pass/, new RegExp(Buffer.from('weir:s3cret-pass').toString('base64'))];
    const error = await registry.ping().then(
      () => assert.fail('no registry listens there'),
      (failure: Error) => failure,
    );
    assert.match(error.message, new RegExp(`schema registry http://127\\.0\\.0\\.1:${port}: GET /config unreachable`));
    for (const secret of secrets) {
      assert.doesNotMatch(`${error.message} ${error.stack} ${JSON.stringify(registry)} ${String(registry)}`, secret);
    }
    const [finding] = await avroDeserializer({ registry }).preflight('kafka source "in"');
    for (const secret of secrets) assert.doesNotMatch(JSON.stringify(finding), secret);
    assert.throws(() => new SchemaRegistryClient({ url: 'http://u:p@host:8081' }), /url holds credentials/);
    assert.throws(() => new SchemaRegistryClient({ url: 'ftp://host' }), /must be http or https/);
    assert.throws(() => new SchemaRegistryClient({ url: 'http://host', tls: { ca: 'x' } }), /tls is set but the url is not https/);
    assert.throws(() => new SchemaRegistryClient({ url: 'http://host', basicAuth: { username: 'u' } as never }), /basicAuth needs a username and a password/);
  });
});
