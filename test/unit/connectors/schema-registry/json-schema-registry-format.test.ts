/**
 * JSON Schema in the Schema Registry wire format (the header, then the record's JSON text), against
 * a real registry (Apicurio, started by the harness; schemas registered through its REST API): the
 * serializer validates each record (draft-07 and 2020-12; a record that does not validate is a
 * RECORD_FAILED WeirError naming the field path) and writes the layout the deserializer reads
 * back; the deserializer validates on request (a record that fails throws, for the source's bad
 * record policy); $refs to other subjects (registry references) resolve; bad messages throw naming
 * what is wrong; the preflight refuses a schema the subject's rule rejects, naming subject and rule.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jsonSchemaDeserializer } from '../../../../src/connectors/schema-registry/json-schema-deserializer.ts';
import { jsonSchemaSerializer } from '../../../../src/connectors/schema-registry/json-schema-serializer.ts';
import { schemaRegistry } from '../../../../src/connectors/schema-registry/schema-registry-client.ts';
import { topicRecord as record, registryWithSchema, wireMessage as wire } from '../../../harness/registry-fixture.ts';

const order = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    amount: { type: 'number' },
    email: { type: 'string', format: 'email' },
    lines: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
  },
  required: ['id', 'amount'],
};
const pair = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Pair',
  type: 'array',
  prefixItems: [{ type: 'string' }, { type: 'integer' }],
  items: false,
};

describe('JSON Schema in the registry wire format (a real Schema Registry)', () => {
  const fixture = registryWithSchema('JSON', JSON.stringify(order));

  test('the serializer validates and writes the header then the JSON; the deserializer reads it back', async () => {
    const registry = schemaRegistry({ url: fixture.server.url });
    const orders = jsonSchemaSerializer<object>({ registry, schema: order, topic: 'orders' });
    assert.equal(await orders.prepare(), fixture.id);
    const bytes = orders({ id: 1, amount: 2.5, lines: [{ sku: 'a' }] });
    assert.deepEqual([...bytes.subarray(0, 5)], [0, 0, 0, 0, fixture.id]);
    assert.equal(bytes.subarray(5).toString(), '{"id":1,"amount":2.5,"lines":[{"sku":"a"}]}');
    const deserializer = jsonSchemaDeserializer<object>({ registry: { url: fixture.server.url }, validate: true });
    assert.deepEqual(deserializer(record(bytes)), { id: 1, amount: 2.5, lines: [{ sku: 'a' }] });

    const refused = (value: object, problem: RegExp) =>
      assert.throws(
        () => orders(value),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, 'RECORD_FAILED');
          assert.match(error.message, /the record does not validate against the JSON Schema Order: /);
          assert.match(error.message, problem);
          return true;
        },
      );
    refused({ id: 1, amount: 'lots' }, /\/amount: must be number/);
    refused({ amount: 1 }, /\/id: must have required property 'id'/);
    refused({ id: 1, amount: 1, lines: [{ sku: 'a' }, {}] }, /\/lines\/1\/sku: must have required property 'sku'/);
    refused({ id: 1, amount: 1, email: 'not an address' }, /\/email: must match format "email"/);
    const unchecked = jsonSchemaSerializer<object>({ registry, schema: order, topic: 'orders', validate: false });
    assert.equal(unchecked({ amount: 'lots' }).subarray(5).toString(), '{"amount":"lots"}', 'validate: false writes it as it is');
  });

  test('draft 2020-12 (by $schema), auto-registered; the record strategy names the subject after the title', async () => {
    const registry = schemaRegistry({ url: fixture.server.url });
    const pairs = jsonSchemaSerializer<unknown[]>({ registry, schema: pair, topic: 'pairs', subjectStrategy: 'topic-record', autoRegister: true });
    assert.equal(pairs.subject, 'pairs-Pair');
    const id = await pairs.prepare();
    assert.equal((await fixture.server.request<number[]>('GET', '/subjects/pairs-Pair/versions')).body.length, 1, 'registered');
    const bytes = pairs(['a', 1]);
    assert.throws(() => pairs(['a', 1, 'extra']), /\(the record\): must NOT have more than 2 items/);
    assert.throws(() => pairs([1, 1]), /\/0: must be string/);
    const deserializer = jsonSchemaDeserializer<unknown[]>({ registry, validate: true });
    assert.deepEqual(deserializer(record(bytes)), ['a', 1]);
    assert.throws(
      () => deserializer(record(wire(id, '["a", "b"]'))),
      /the record \(schema id \d+\) does not validate against its schema: \/1: must be integer/,
    );
    assert.throws(
      () => jsonSchemaSerializer({ registry, schema: { type: 'object' }, topic: 'x', subjectStrategy: 'record' }),
      /subjectStrategy 'record' names the subject after the record, and the JSON Schema has no title/,
    );
  });

  test('reading: validation only on request; bad messages throw naming what is wrong', async () => {
    const proto = await fixture.server.request<{ id: number }>('POST', '/subjects/p-value/versions', {
      schemaType: 'PROTOBUF',
      schema: 'syntax = "proto3";\nmessage P { int32 n = 1; }\n',
    });
    const lenient = jsonSchemaDeserializer<object>({ registry: { url: fixture.server.url } });
    const strict = jsonSchemaDeserializer<object>({ registry: { url: fixture.server.url }, validate: true });
    const invalid = wire(fixture.id, '{"id": "one", "amount": 1}');
    assert.deepEqual(lenient(record(invalid)), { id: 'one', amount: 1 }, 'not validated by default');
    assert.throws(() => strict(record(invalid)), /does not validate against its schema: \/id: must be integer/);
    assert.throws(() => lenient(record(wire(fixture.id, '{"id": 1'))), /the JSON Schema payload \(schema id \d+\) is not JSON/);
    const wrongMagic = wire(fixture.id, '{}');
    wrongMagic[0] = 1;
    assert.throws(() => lenient(record(wrongMagic)), /unknown magic byte 1/);
    assert.throws(() => lenient(record(wire(987654, '{}'))), /schema id 987654 is unknown to schema registry/);
    assert.throws(() => lenient(record(wire(proto.body.id, '{}'))), new RegExp(`schema id ${proto.body.id} is a PROTOBUF schema, not JSON Schema`));
  });

  test("$refs to other subjects' schemas (registry references) resolve", async () => {
    const address = { $id: 'address.json', type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    assert.equal((await fixture.server.request('POST', '/subjects/address/versions', { schemaType: 'JSON', schema: JSON.stringify(address) })).status, 200);
    const customer = { title: 'Customer', type: 'object', properties: { name: { type: 'string' }, home: { $ref: 'address.json' } } };
    const references = [{ name: 'address.json', subject: 'address', version: 1 }];
    const registered = await fixture.server.request<{ id: number }>('POST', '/subjects/customers-value/versions', {
      schemaType: 'JSON',
      schema: JSON.stringify(customer),
      references,
    });
    assert.equal(registered.status, 200);
    const registry = schemaRegistry({ url: fixture.server.url });
    const customers = jsonSchemaSerializer<object>({ registry, schema: customer, topic: 'customers', references });
    assert.equal(await customers.prepare(), registered.body.id);
    assert.throws(() => customers({ name: 'ada', home: {} }), /\/home\/city: must have required property 'city'/);
    const bytes = customers({ name: 'ada', home: { city: 'London' } });
    const deserializer = jsonSchemaDeserializer<object>({ registry: { url: fixture.server.url }, validate: true });
    assert.deepEqual(deserializer(record(bytes)), { name: 'ada', home: { city: 'London' } });
    assert.throws(() => deserializer(record(wire(registered.body.id, '{"home": {"city": 5}}'))), /\/home\/city: must be string/);
  });

  test("the preflight refuses a schema the subject's compatibility rule rejects, naming the subject and the rule", async () => {
    await fixture.server.request('PUT', '/config/totals-value', { compatibility: 'BACKWARD' });
    const v1 = { title: 'Total', type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] };
    assert.equal((await fixture.server.request('POST', '/subjects/totals-value/versions', { schemaType: 'JSON', schema: JSON.stringify(v1) })).status, 200);
    const changed = { title: 'Total', type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };
    const registry = schemaRegistry({ url: fixture.server.url });
    const findings = await jsonSchemaSerializer({ registry, schema: changed, topic: 'totals', autoRegister: true }).preflight('kafka sink "out"');
    assert.equal(findings.length, 1, JSON.stringify(findings));
    assert.match(
      findings[0]?.message ?? '',
      /the JSON Schema Total it writes breaks subject "totals-value"'s compatibility rule BACKWARD against the subject's latest version: .*properties\/id/,
    );
    assert.deepEqual(await jsonSchemaSerializer({ registry, schema: v1, topic: 'totals' }).preflight('kafka sink "out"'), []);
  });
});
