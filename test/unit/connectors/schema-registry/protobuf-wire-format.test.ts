/**
 * Confluent's Protobuf wire format, without a registry: the message indexes after the header
 * (a zigzag-varint count then each index; [0] as the single byte 0, and the long form [1, 0] read
 * as [0] too), the message a path of indexes names in a .proto (top-level messages counted in
 * declaration order, enums not counted, nested messages by their own index), and the record check
 * the serializer runs (naming the field path).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { protobufRecordProblem } from '../../../../src/connectors/schema-registry/protobuf-record-check.ts';
import { indexesOf, messageAt, messageNamed, parseProto } from '../../../../src/connectors/schema-registry/protobuf-schema.ts';
import { messageIndexesBytes, readMessageIndexes } from '../../../../src/connectors/schema-registry/wire-format.ts';

const header = Buffer.from([0, 0, 0, 0, 7]);
const read = (indexes: number[] | Buffer) => {
  const bytes = Buffer.concat([header, Buffer.isBuffer(indexes) ? indexes : messageIndexesBytes(indexes), Buffer.from([0xaa])]);
  const answer = readMessageIndexes(bytes, 5);
  assert.equal(bytes[answer.offset], 0xaa, 'the payload starts right after the indexes');
  return answer.indexes;
};

const proto = `
syntax = "proto3";
package dev.weir.test;
import "google/protobuf/timestamp.proto";

enum Kind { KIND_UNSPECIFIED = 0; BIG = 1; }
message Order {
  int64 id = 1;
  double amount = 2;
  Kind kind = 3;
  google.protobuf.Timestamp at = 4;
  message Line { string sku = 1; int32 count = 2; }
  enum Colour { RED = 0; }
  message Note { message Detail { bytes blob = 1; } Detail detail = 1; }
  repeated Line lines = 5;
  map<string, int64> tags = 6;
}
message Total { int64 id = 1; }
`;

describe('Protobuf message indexes (Confluent wire format)', () => {
  test('[0] is the single byte 0; others a zigzag count then zigzag indexes', () => {
    assert.deepEqual([...messageIndexesBytes([0])], [0]);
    assert.deepEqual([...messageIndexesBytes([])], [0]);
    assert.deepEqual([...messageIndexesBytes([1])], [2, 2]);
    assert.deepEqual([...messageIndexesBytes([0, 1])], [4, 0, 2]);
    assert.deepEqual([...messageIndexesBytes([2, 0, 1])], [6, 4, 0, 2]);
    assert.deepEqual([...messageIndexesBytes([64])], [2, 0x80, 0x01], 'zigzag(64) = 128: two varint bytes');
  });

  test('reads back what it writes, and the long form of [0]', () => {
    for (const indexes of [[0], [1], [0, 1], [2, 0, 1], [64], [1000, 3, 70000]]) assert.deepEqual(read(indexes), indexes);
    assert.deepEqual(read(Buffer.from([2, 0])), [0], 'count 1, index 0: [0] written without the optimization');
  });

  test('indexes that do not read throw, saying why', () => {
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7]), 5), /message indexes are truncated/);
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7, 0x80, 0x80]), 5), /truncated/);
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7, 1, 0]), 5), /count -1/);
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7, 40, 0]), 5), /count 20\) do not fit/);
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7, 2, 1]), 5), /message index -1 is negative/);
    assert.throws(() => readMessageIndexes(Buffer.from([0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), 5), /longer than 5 bytes/);
  });
});

describe('the message a path of indexes names', () => {
  const parsed = parseProto(proto);
  test('top-level messages counted in declaration order, enums not counted', () => {
    assert.deepEqual(
      parsed.messages.map((type) => type.name),
      ['Order', 'Total'],
    );
    assert.equal(messageAt(parsed, [0]).fullName, '.dev.weir.test.Order');
    assert.equal(messageAt(parsed, [1]).fullName, '.dev.weir.test.Total');
  });
  test('nested messages: [0, 0] Order.Line, [0, 1] Order.Note, [0, 1, 0] Order.Note.Detail', () => {
    assert.equal(messageAt(parsed, [0, 0]).fullName, '.dev.weir.test.Order.Line');
    assert.equal(messageAt(parsed, [0, 1]).fullName, '.dev.weir.test.Order.Note');
    assert.equal(messageAt(parsed, [0, 1, 0]).fullName, '.dev.weir.test.Order.Note.Detail');
    assert.deepEqual(indexesOf(parsed, messageNamed(parsed, 'Order.Note.Detail')), [0, 1, 0]);
    assert.deepEqual(indexesOf(parsed, messageNamed(parsed, 'dev.weir.test.Total')), [1]);
    assert.deepEqual(indexesOf(parsed, messageNamed(parsed, 'Order')), [0]);
  });
  test('indexes past the messages, an unknown name, an import that is neither well-known nor a reference: errors naming them', () => {
    assert.throws(() => messageAt(parsed, [2]), /message indexes \[2\] point past the schema's messages \(2 there\)/);
    assert.throws(() => messageAt(parsed, [1, 0]), /point past/);
    assert.throws(() => messageNamed(parsed, 'Nope'), /declares no message "Nope" \(it declares dev.weir.test.Order, dev.weir.test.Order.Line/);
    assert.throws(
      () => parseProto('syntax = "proto3"; import "other/customer.proto"; message A { Customer c = 1; }'),
      /imports "other\/customer.proto", which is neither one of its registry references \(it has none\) nor a well-known google\/protobuf type/,
    );
    const withReference = parseProto('syntax = "proto3"; import "other/customer.proto"; message A { Customer c = 1; }', [
      { name: 'other/customer.proto', schemaType: 'PROTOBUF', schema: 'syntax = "proto3"; message Customer { string name = 1; }' },
    ]);
    assert.equal(messageAt(withReference, [0]).fullName, '.A', "the reference's messages are not the file's");
  });
});

describe('the record check (what the serializer refuses)', () => {
  const order = messageNamed(parseProto(proto), 'Order');
  test('accepts what the deserializer gives back and the forms fromObject converts', () => {
    const good = {
      id: '9007199254740993',
      amount: 1.5,
      kind: 'BIG',
      at: { seconds: '1700000000', nanos: 5 },
      lines: [{ sku: 'a', count: 2 }],
      tags: { x: 5, y: '6' },
    };
    assert.equal(protobufRecordProblem(order, good), undefined);
    assert.equal(protobufRecordProblem(order, { id: 7, kind: 1, amount: 2 }), undefined);
    assert.equal(protobufRecordProblem(order, { id: 7n, unknown: 'ignored' }), undefined);
  });
  test('names the field path of what does not fit', () => {
    assert.equal(protobufRecordProblem(order, { amount: 'lots' }), 'amount: "lots" is not a double');
    assert.equal(protobufRecordProblem(order, { id: 1.5 }), 'id: 1.5 is not an int64');
    assert.equal(protobufRecordProblem(order, { kind: 'HUGE' }), 'kind: "HUGE" is not a value of enum Kind (KIND_UNSPECIFIED, BIG)');
    assert.equal(protobufRecordProblem(order, { lines: [{ sku: 'a' }, { count: 'x' }] }), 'lines[1].count: "x" is not an int32');
    assert.equal(protobufRecordProblem(order, { lines: { sku: 'a' } }), 'lines: {"sku":"a"} is not a list (repeated Line)');
    assert.equal(protobufRecordProblem(order, { tags: { x: 'y' } }), 'tags["x"]: "y" is not an int64');
    assert.equal(protobufRecordProblem(order, 'text'), 'the record: "text" is not a Order message (an object)');
  });
});
