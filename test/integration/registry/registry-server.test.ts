/**
 * The real Schema Registry the registry formats are proven against (issue 37): Apicurio Registry,
 * built from Maven Central and started by test/harness/schema-registry.ts, speaking Confluent's API.
 * Registers an Avro, a JSON Schema and a Protobuf schema under subjects, reads them back by id and by
 * subject, and checks the server enforces a compatibility rule (the preflight will rely on it); then
 * the client Weir uses (@kafkajs/confluent-schema-registry, avsc) writes and reads records in the
 * registry's wire format through it: magic byte 0, the 4-byte big-endian schema id, the payload.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avsc from 'avsc';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';

interface Registered {
  id: number;
}
interface SubjectVersion {
  id: number;
  subject: string;
  version: number;
  schema: string;
  schemaType?: string;
}

const order = {
  type: 'record',
  name: 'Order',
  namespace: 'dev.weir.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'amount', type: 'double' },
  ],
};
const event = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const person = 'syntax = "proto3";\npackage dev.weir.test;\n\nmessage Person {\n  string name = 1;\n  int32 age = 2;\n}\n';

describe('a real Schema Registry (Apicurio, Confluent API)', () => {
  let registry: SchemaRegistryServer;
  before(async () => {
    registry = await startSchemaRegistry();
  });
  after(async () => {
    await registry?.stop();
  });

  test('registers Avro, JSON Schema and Protobuf under subjects and reads them back', async () => {
    const avro = await registry.request<Registered>('POST', '/subjects/orders-value/versions', { schema: JSON.stringify(order) });
    const json = await registry.request<Registered>('POST', '/subjects/events-value/versions', { schemaType: 'JSON', schema: JSON.stringify(event) });
    const proto = await registry.request<Registered>('POST', '/subjects/people-value/versions', { schemaType: 'PROTOBUF', schema: person });
    for (const answer of [avro, json, proto]) assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const ids = [avro.body.id, json.body.id, proto.body.id];
    assert.equal(new Set(ids).size, 3, `three schemas, three ids: ${ids}`);
    for (const id of ids) assert.ok(Number.isInteger(id) && id > 0 && id < 2 ** 31, `an id fits the wire format's 4 bytes: ${id}`);

    const subjects = await registry.request<string[]>('GET', '/subjects');
    assert.deepEqual([...subjects.body].sort(), ['events-value', 'orders-value', 'people-value']);

    const byId = await registry.request<{ schema: string; schemaType?: string }>('GET', `/schemas/ids/${avro.body.id}`);
    assert.deepEqual(JSON.parse(byId.body.schema), order);
    assert.equal(byId.body.schemaType ?? 'AVRO', 'AVRO');

    const latestJson = await registry.request<SubjectVersion>('GET', '/subjects/events-value/versions/latest');
    assert.equal(latestJson.body.id, json.body.id);
    assert.equal(latestJson.body.schemaType, 'JSON');
    assert.deepEqual(JSON.parse(latestJson.body.schema), event);

    const latestProto = await registry.request<SubjectVersion>('GET', '/subjects/people-value/versions/1');
    assert.equal(latestProto.body.id, proto.body.id);
    assert.equal(latestProto.body.schemaType, 'PROTOBUF');
    assert.match(latestProto.body.schema, /message Person \{/);

    const again = await registry.request<Registered>('POST', '/subjects/orders-value/versions', { schema: JSON.stringify(order) });
    assert.equal(again.body.id, avro.body.id, 'registering the same schema again gives the same id');

    const unknown = await registry.request<{ error_code: number }>('GET', '/schemas/ids/987654');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error_code, 40403, 'an unknown id is 40403, as Confluent says it');
  });

  test('enforces a subject compatibility rule', async () => {
    const subject = 'rules-value';
    assert.equal((await registry.request('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(order) })).status, 200);
    const config = await registry.request<{ compatibility: string }>('PUT', `/config/${subject}`, { compatibility: 'BACKWARD' });
    assert.equal(config.body.compatibility, 'BACKWARD');

    const withField = (extra: Record<string, unknown>) => ({ ...order, fields: [...order.fields, { name: 'currency', type: 'string', ...extra }] });
    const breaking = JSON.stringify(withField({}));
    const compatible = JSON.stringify(withField({ default: 'EUR' }));

    const check = await registry.request<{ is_compatible: boolean }>('POST', `/compatibility/subjects/${subject}/versions/latest`, { schema: breaking });
    assert.equal(check.body.is_compatible, false, 'a new field without a default breaks BACKWARD');
    const refused = await registry.request<{ message: string }>('POST', `/subjects/${subject}/versions`, { schema: breaking });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.match(refused.body.message, /currency/);

    const ok = await registry.request<{ is_compatible: boolean }>('POST', `/compatibility/subjects/${subject}/versions/latest`, { schema: compatible });
    assert.equal(ok.body.is_compatible, true);
    const v2 = await registry.request<Registered>('POST', `/subjects/${subject}/versions`, { schema: compatible });
    assert.equal(v2.status, 200);
    const versions = await registry.request<number[]>('GET', `/subjects/${subject}/versions`);
    assert.deepEqual(versions.body, [1, 2]);
  });

  test('the client writes and reads the wire format through it (Avro, JSON Schema, Protobuf)', async () => {
    const client = new SchemaRegistry({ host: registry.url });
    const { id: avroId } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(order) }, { subject: 'client-orders-value' });
    const record = { id: 42, amount: 21.5 };
    const bytes = await client.encode(avroId, record);
    assert.equal(bytes[0], 0, 'magic byte');
    assert.equal(bytes.readInt32BE(1), avroId, 'schema id, 4 bytes big-endian');
    const type = avsc.Type.forSchema(order as avsc.Schema);
    assert.deepEqual({ ...type.fromBuffer(bytes.subarray(5)) }, record, 'the payload is plain Avro binary');
    assert.deepEqual({ ...(await client.decode(bytes)) }, record);

    const { id: jsonId } = await client.register({ type: SchemaType.JSON, schema: JSON.stringify(event) }, { subject: 'client-events-value' });
    const jsonBytes = await client.encode(jsonId, { n: 7 });
    assert.equal(jsonBytes.readInt32BE(1), jsonId);
    assert.deepEqual(await client.decode(jsonBytes), { n: 7 });
    await assert.rejects(client.encode(jsonId, { n: 'seven' }), 'a record the JSON Schema refuses is not written');

    const { id: protoId } = await client.register({ type: SchemaType.PROTOBUF, schema: person }, { subject: 'client-people-value' });
    const protoBytes = await client.encode(protoId, { name: 'ada', age: 36 });
    assert.equal(protoBytes.readInt32BE(1), protoId);
    assert.deepEqual({ ...(await client.decode(protoBytes)) }, { name: 'ada', age: 36 });

    const unknownId = Buffer.from(bytes);
    unknownId.writeInt32BE(987654, 1);
    await assert.rejects(client.decode(unknownId), 'an unknown schema id is an error, not a record');
    const wrongMagic = Buffer.from(bytes);
    wrongMagic[0] = 1;
    await assert.rejects(client.decode(wrongMagic), 'a wrong magic byte is an error, not a record');
  });
});
