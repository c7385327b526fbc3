/**
 * Protobuf in Confluent's Schema Registry wire format, against a real registry (Apicurio, started by
 * the harness; schemas registered through its REST API, not through Weir): Weir's deserializer reads
 * bytes laid out by hand as Confluent's serializers write them (the header, the message indexes,
 * the Protobuf bytes; [0] as one 0 byte and in its long form; nested messages); the serializer
 * writes that layout and what the deserializer reads back; imports of Google's well-known types and
 * of other subjects (registry references) resolve; bad messages (wrong magic byte, unknown id,
 * indexes the schema does not have, a payload that does not decode, an id of another schema type)
 * throw naming what is wrong; a record that does not fit the message is refused naming the field;
 * the preflight refuses a message the subject's compatibility rule rejects, naming the subject and
 * the rule.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import protobufjs from 'protobufjs';
import { protobufDeserializer } from '../../../../src/connectors/schema-registry/protobuf-deserializer.ts';
import { protobufSerializer } from '../../../../src/connectors/schema-registry/protobuf-serializer.ts';
import { schemaRegistry } from '../../../../src/connectors/schema-registry/schema-registry-client.ts';
import { topicRecord as record, registryWithSchema, wireMessage as wire } from '../../../harness/registry-fixture.ts';

const orderProto = `syntax = "proto3";
package dev.weir.test;
import "google/protobuf/timestamp.proto";

enum Kind { KIND_UNSPECIFIED = 0; BIG = 1; }
message Order {
  int64 id = 1;
  double amount = 2;
  Kind kind = 3;
  google.protobuf.Timestamp at = 4;
  message Line { string sku = 1; int32 count = 2; }
  repeated Line lines = 5;
  bytes blob = 6;
  optional string note = 7;
}
message Total { int64 id = 1; int64 cents = 2; }
`;
/** An independent encoder of the payloads: protobufjs on the same .proto. */
const reference = protobufjs.parse(orderProto, { keepCase: true }).root;
reference.addJSON((protobufjs.common.get('google/protobuf/timestamp.proto') as { nested: Record<string, protobufjs.AnyNestedObject> }).nested);
const Order = reference.lookupType('dev.weir.test.Order');
const Line = reference.lookupType('dev.weir.test.Order.Line');
const payload = (type: protobufjs.Type, value: object) => Buffer.from(type.encode(type.fromObject(value)).finish());

describe('Protobuf in the registry wire format (a real Schema Registry)', () => {
  const fixture = registryWithSchema('PROTOBUF', orderProto);

  test("reads Confluent's layout: [0] as one 0 byte or its long form, a nested message's indexes; plain objects out", async () => {
    const deserializer = protobufDeserializer<Record<string, unknown>>({ registry: { url: fixture.server.url } });
    const order = {
      id: '9007199254740993',
      amount: 12.5,
      kind: 'BIG',
      at: { seconds: 1700000000, nanos: 5 },
      lines: [{ sku: 'a', count: 2 }],
      blob: Buffer.from('hi'),
    };
    const bytes = wire(fixture.id, [0], payload(Order, order));
    assert.equal(deserializer.prepare([record(bytes)]) instanceof Promise, true, 'an id not cached yet: prepare fetches it');
    await deserializer.prepare([record(bytes)]);
    assert.equal(deserializer.prepare([record(bytes)]), undefined, 'cached: no promise');
    const expected = {
      id: '9007199254740993',
      amount: 12.5,
      kind: 'BIG',
      at: { seconds: '1700000000', nanos: 5 },
      lines: [{ sku: 'a', count: 2 }],
      blob: Buffer.from('hi'),
    };
    assert.deepEqual(deserializer(record(bytes)), expected, 'int64 as decimal strings, enums by name, bytes as Buffers; unset optional absent');
    assert.deepEqual(deserializer(record(wire(fixture.id, [2, 0], payload(Order, order)))), expected, 'the long form of [0]: count 1, index 0');
    assert.deepEqual(
      deserializer(record(wire(fixture.id, [0], Buffer.alloc(0)))),
      {
        id: '0',
        amount: 0,
        kind: 'KIND_UNSPECIFIED',
        at: null,
        lines: [],
        blob: Buffer.alloc(0),
      },
      'an empty payload: every field its default, an unset message field null',
    );
    assert.deepEqual(deserializer(record(wire(fixture.id, [4, 0, 0], payload(Line, { sku: 'x', count: 3 })))), { sku: 'x', count: 3 }, '[0, 0]: Order.Line');
    assert.deepEqual(deserializer(record(wire(fixture.id, [2, 2], payload(Order, { id: 5 })))), { id: '5', cents: '0' }, '[1]: Total');
    const numbers = protobufDeserializer<{ id: number }>({ registry: { url: fixture.server.url }, longs: 'number' });
    assert.equal(numbers(record(bytes)).id, 9007199254740992, "longs: 'number' (exact to 2^53 only)");
  });

  test('the serializer writes that layout, the deserializer reads it back; a record that does not fit is refused naming the field', async () => {
    const registry = schemaRegistry({ url: fixture.server.url });
    const orders = protobufSerializer<object>({ registry, schema: orderProto, topic: 'orders' });
    assert.equal(orders.subject, 'orders-value');
    assert.equal(await orders.prepare(), fixture.id, 'the registered id, looked up');
    const bytes = orders({ id: '42', amount: 1.25, kind: 'BIG', lines: [{ sku: 's', count: 1 }] });
    assert.deepEqual([...bytes.subarray(0, 6)], [0, ...[0, 0, 0, fixture.id], 0], 'magic, id, [0] as one byte');
    assert.deepEqual(Order.toObject(Order.decode(bytes.subarray(6)), { longs: String, enums: String }), {
      id: '42',
      amount: 1.25,
      kind: 'BIG',
      lines: [{ sku: 's', count: 1 }],
    });
    const lines = protobufSerializer<object>({ registry, schema: orderProto, topic: 'orders', messageName: 'Order.Line' });
    const line = lines({ sku: 'q', count: 9 });
    assert.deepEqual([...line.subarray(5, 8)], [4, 0, 0], 'Order.Line: indexes [0, 0]');
    const deserializer = protobufDeserializer<object>({ registry });
    assert.deepEqual(deserializer(record(line)), { sku: 'q', count: 9 });
    assert.equal((deserializer(record(bytes)) as { id: string }).id, '42');
    const totals = protobufSerializer<object>({ registry, schema: orderProto, topic: 'orders', messageName: 'dev.weir.test.Total' });
    assert.deepEqual([...totals({ id: 1, cents: 2 }).subarray(5, 7)], [2, 2], 'Total: indexes [1]');

    assert.throws(
      () => orders({ id: 1, lines: [{ sku: 's' }, { count: 'many' }] }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'RECORD_FAILED');
        assert.match(error.message, /does not fit the Protobuf message dev\.weir\.test\.Order: lines\[1\]\.count: "many" is not an int32/);
        return true;
      },
    );
    assert.throws(() => orders({ kind: 'HUGE' }), /kind: "HUGE" is not a value of enum Kind/);
    assert.throws(() => protobufSerializer({ registry, schema: orderProto, topic: 'orders', messageName: 'Nope' }), /declares no message "Nope"/);
    const recordNamed = protobufSerializer({ registry, schema: orderProto, topic: 'orders', subjectStrategy: 'topic-record', messageName: 'Total' });
    assert.equal(recordNamed.subject, 'orders-dev.weir.test.Total', "the 'record' strategies name the message's full name");
  });

  test("imports of other subjects' schemas (registry references) resolve, for reading and writing", async () => {
    const customer = 'syntax = "proto3";\npackage other;\nmessage Customer { string name = 1; int64 since = 2; }\n';
    const withImport = 'syntax = "proto3";\nimport "other/customer.proto";\nmessage Visit { other.Customer who = 1; int32 minutes = 2; }\n';
    assert.equal((await fixture.server.request('POST', '/subjects/customer/versions', { schemaType: 'PROTOBUF', schema: customer })).status, 200);
    const references = [{ name: 'other/customer.proto', subject: 'customer', version: 1 }];
    const visit = await fixture.server.request<{ id: number }>('POST', '/subjects/visits-value/versions', {
      schemaType: 'PROTOBUF',
      schema: withImport,
      references,
    });
    assert.equal(visit.status, 200, JSON.stringify(visit.body));
    const registry = schemaRegistry({ url: fixture.server.url });
    const visits = protobufSerializer<object>({ registry, schema: withImport, topic: 'visits', references });
    assert.equal(await visits.prepare(), visit.body.id);
    const bytes = visits({ who: { name: 'ada', since: '1815' }, minutes: 30 });
    // A fresh client (nothing cached), read without prepare: the synchronous path fetches the schema and its reference.
    const deserializer = protobufDeserializer<object>({ registry: { url: fixture.server.url } });
    assert.deepEqual(deserializer(record(bytes)), { who: { name: 'ada', since: '1815' }, minutes: 30 });
  });

  test('bad messages throw, naming what is wrong (the source policy then takes them)', async () => {
    const avro = await fixture.server.request<{ id: number }>('POST', '/subjects/avro-value/versions', { schema: '"long"' });
    const deserializer = protobufDeserializer<object>({ registry: { url: fixture.server.url } });
    const good = wire(fixture.id, [0], payload(Order, { id: 1 }));
    const wrongMagic = Buffer.from(good);
    wrongMagic[0] = 1;
    assert.throws(() => deserializer(record(wrongMagic)), /unknown magic byte 1/);
    assert.throws(() => deserializer(record(wire(987654, [0], Buffer.alloc(0)))), /schema id 987654 is unknown to schema registry/);
    assert.throws(
      () => deserializer(record(wire(fixture.id, [0], Buffer.from([0x0a, 0x10, 0x01])))),
      /the Protobuf payload \(schema id \d+, message dev\.weir\.test\.Order\) does not decode: index out of range/,
    );
    assert.throws(() => deserializer(record(wire(fixture.id, [2, 6], Buffer.alloc(0)))), /message indexes \[3\] point past the schema's messages \(2 there\)/);
    assert.throws(() => deserializer(record(wire(fixture.id, [4], Buffer.alloc(0)))), /message indexes .* do not fit|truncated/);
    assert.throws(() => deserializer(record(wire(avro.body.id, [0], Buffer.alloc(0)))), new RegExp(`schema id ${avro.body.id} is a AVRO schema, not Protobuf`));
    assert.throws(() => deserializer(record(null)), /no bytes \(null\)/);
  });

  test("the preflight refuses a message the subject's compatibility rule rejects, naming the subject and the rule", async () => {
    const v1 = 'syntax = "proto3";\npackage shop;\nmessage Receipt { int64 id = 1; string label = 2; }\n';
    const changed = 'syntax = "proto3";\npackage shop;\nmessage Receipt { string id = 1; string label = 2; }\n';
    await fixture.server.request('PUT', '/config/receipts-value', { compatibility: 'BACKWARD' });
    assert.equal((await fixture.server.request('POST', '/subjects/receipts-value/versions', { schemaType: 'PROTOBUF', schema: v1 })).status, 200);
    const registry = schemaRegistry({ url: fixture.server.url });
    const findings = await protobufSerializer({ registry, schema: changed, topic: 'receipts', autoRegister: true }).preflight('kafka sink "out"');
    assert.equal(findings.length, 1, JSON.stringify(findings));
    assert.match(
      findings[0]?.message ?? '',
      /kafka sink "out": the Protobuf message shop\.Receipt it writes breaks subject "receipts-value"'s compatibility rule BACKWARD/,
    );
    assert.match(findings[0]?.hint ?? '', /BACKWARD-compatible .*field number/);
    const unregistered = await protobufSerializer({ registry, schema: changed, topic: 'elsewhere' }).preflight('kafka sink "out"');
    assert.match(
      unregistered[0]?.message ?? '',
      /subject "elsewhere-value" does not hold the Protobuf message shop\.Receipt the sink writes \(autoRegister is off\)/,
    );
    assert.deepEqual(await protobufSerializer({ registry, schema: v1, topic: 'receipts' }).preflight('kafka sink "out"'), [], 'registered: accepted');
  });
});
