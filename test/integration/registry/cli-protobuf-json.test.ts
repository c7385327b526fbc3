/**
 * `weir produce` / `weir consume` in Protobuf and JSON Schema through the real registry (Apicurio,
 * started by the harness) and the real broker (issue 37 point 5): a produce whose subject does not
 * hold the schema is refused naming the subject; with --auto-register it registers the .proto (the
 * message --message names, nested ones too) or the JSON Schema and writes JSON lines in the wire
 * format, keys too; Weir's deserializers read every record back; `weir consume --value-format
 * protobuf|json-schema` prints them as JSON, which `weir produce` takes again; a line the schema
 * does not fit is one error naming the line and the field; --help says what the formats are.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { jsonSchemaDeserializer } from '../../../src/connectors/schema-registry/json-schema-deserializer.ts';
import { protobufDeserializer } from '../../../src/connectors/schema-registry/protobuf-deserializer.ts';
import { weir } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';
import { weirWithInput } from './weir-with-input.ts';

const brokers = testBrokers();
const kafkaEnv = { KAFKA_BROKERS: formatBootstrap(brokers) };
const proto = `syntax = "proto3";
package dev.weir.cli;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  double amount = 2;
  enum Kind { SMALL = 0; BIG = 1; }
  Kind kind = 3;
  bytes blob = 4;
  google.protobuf.Timestamp at = 5;
  message Line { string sku = 1; }
}
message Key { string id = 1; }
`;
const jsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Event',
  type: 'object',
  properties: { id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
  required: ['id'],
};

describe('weir produce / consume with Protobuf and JSON Schema through a real Schema Registry', () => {
  let server: SchemaRegistryServer;
  let folder: string;
  let protoFile: string;
  let jsonFile: string;
  const removes: (() => Promise<void>)[] = [];
  before(async () => {
    server = await startSchemaRegistry();
    folder = await mkdtemp(join(tmpdir(), 'weir-cli-pj-'));
    protoFile = join(folder, 'order.proto');
    jsonFile = join(folder, 'event.json');
    await writeFile(protoFile, proto);
    await writeFile(jsonFile, JSON.stringify(jsonSchema, null, 2));
  });
  after(async () => {
    await server?.stop();
    for (const remove of removes) await remove().catch(() => {});
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });
  const topicFor = async (label: string) => {
    const { topic, remove } = await createTestTopic(brokers, label, 1);
    removes.push(remove);
    return topic;
  };

  test('Protobuf: refused unregistered, then written with --auto-register (keys too), read back, printed as JSON that produce takes again', async () => {
    const topic = await topicFor('cli-proto');
    const args = ['produce', topic, '--value-format', 'protobuf', '--schema', protoFile, '--message', 'Order', '--registry', server.url];
    const lines = [
      '{"id": 1, "amount": 9.5, "kind": "BIG", "blob": "aGk=", "at": {"seconds": "1700000000", "nanos": 0}}',
      '{"id": "9007199254740993", "amount": 0.25}',
    ];
    const refused = await weirWithInput(args, `${lines.join('\n')}\n`);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(`subject "${topic}-value" does not hold the Protobuf message dev\\.weir\\.cli\\.Order \\(--auto-register is off\\)`),
    );
    assert.equal((await readTopic({ bootstrap: formatBootstrap(brokers), topic })).length, 0, 'nothing written');

    const produced = await weirWithInput([...args, '--auto-register'], `${lines.join('\n')}\n`);
    assert.equal(produced.code, 0, produced.stderr);
    assert.match(produced.stderr, new RegExp(`produced 2 records to ${topic}`));
    const keyed = await weirWithInput(
      [...args, '--key-format', 'protobuf', '--key-schema', protoFile, '--key-message', 'dev.weir.cli.Key', '--auto-register'],
      '{"id": "k-3"}\t{"id": 3, "amount": 3}\n',
    );
    assert.equal(keyed.code, 0, keyed.stderr);
    const nested = await weirWithInput(
      ['produce', topic, '--value-format', 'protobuf', '--schema', protoFile, '--message', 'Order.Line', '--registry', server.url],
      '{"sku": "s-4"}\n',
    );
    assert.equal(nested.code, 0, nested.stderr);

    const records = await readTopic({ bootstrap: formatBootstrap(brokers), topic });
    assert.equal(records.length, 4);
    assert.deepEqual([...(records[3]?.value?.subarray(5, 8) ?? [])], [4, 0, 0], 'Order.Line: message indexes [0, 0]');
    const values = protobufDeserializer<Record<string, unknown>>({ registry: { url: server.url } });
    const keys = protobufDeserializer<Record<string, unknown>>({ registry: { url: server.url }, isKey: true });
    assert.deepEqual(values(records[0] as never), { id: '1', amount: 9.5, kind: 'BIG', blob: Buffer.from('hi'), at: { seconds: '1700000000', nanos: 0 } });
    assert.equal(values(records[1] as never).id, '9007199254740993');
    assert.deepEqual(keys(records[2] as never), { id: 'k-3' });
    assert.deepEqual(values(records[3] as never), { sku: 's-4' });

    const consumed = await weir(
      ['consume', topic, '--value-format', 'protobuf', '--key-format', 'protobuf', '--registry', server.url, '--json', '--max', '3'],
      kafkaEnv,
    );
    assert.equal(consumed.code, 0, consumed.stderr);
    const printed = consumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: unknown; value: Record<string, unknown> });
    assert.deepEqual(
      printed[0]?.value,
      { id: '1', amount: 9.5, kind: 'BIG', blob: 'aGk=', at: { seconds: '1700000000', nanos: 0 } },
      'bytes as base64, int64 as strings',
    );
    assert.deepEqual(printed[2]?.key, { id: 'k-3' });
    assert.equal(printed[0]?.key, null, 'no key');

    const again = await weirWithInput(args, `${printed.map((record) => JSON.stringify(record.value)).join('\n')}\n`);
    assert.equal(again.code, 0, again.stderr);
    const all = await readTopic({ bootstrap: formatBootstrap(brokers), topic });
    assert.deepEqual(values(all[4] as never), values(records[0] as never), 'what consume prints, produce writes back the same');

    const bad = await weirWithInput(args, '{"id": 5, "amount": 1}\n{"id": 6, "kind": "HUGE"}\n');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /stdin line 2: the value does not fit the Protobuf message dev\.weir\.cli\.Order: kind: "HUGE" is not a value of enum Kind/);
  });

  test('JSON Schema: written with --auto-register, validated per line, printed back', async () => {
    const topic = await topicFor('cli-json');
    const args = ['produce', topic, '--value-format', 'json-schema', '--schema', jsonFile, '--registry', server.url];
    const produced = await weirWithInput([...args, '--auto-register'], '{"id": 1, "tags": ["a"]}\n{"id": 2}\n');
    assert.equal(produced.code, 0, produced.stderr);
    const records = await readTopic({ bootstrap: formatBootstrap(brokers), topic });
    const values = jsonSchemaDeserializer<object>({ registry: { url: server.url }, validate: true });
    assert.deepEqual(
      records.map((record) => values(record as never)),
      [{ id: 1, tags: ['a'] }, { id: 2 }],
    );
    const consumed = await weir(['consume', topic, '--value-format', 'json-schema', '--registry', server.url], kafkaEnv);
    assert.equal(consumed.code, 0, consumed.stderr);
    assert.match(consumed.stdout, /^0\t0\t\t\{"id":1,"tags":\["a"\]\}$/m);
    const bad = await weirWithInput(args, '{"id": 3}\n{"id": 4, "tags": [5]}\n');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /stdin line 2: the value does not validate against the JSON Schema Event: \/tags\/0: must be string/);
    const noSchema = await weir(['produce', topic, '--value-format', 'json-schema', '--registry', server.url], kafkaEnv);
    assert.match(noSchema.stderr, /--value-format json-schema needs the schema the records are written with\n.*--schema <schema\.json>/);
    const messageWithoutProtobuf = await weir(['produce', topic, '--value-format', 'json-schema', '--schema', jsonFile, '--message', 'X'], kafkaEnv);
    assert.match(messageWithoutProtobuf.stderr, /--message is given and --value-format is json-schema/);
  });

  test('--help names the formats and the Protobuf message options', async () => {
    const produce = (await weir(['produce', '--help'])).stdout.replace(/\s+/g, ' ');
    assert.match(produce, /--value-format <format> the values: string \(each line as it is\), or avro, protobuf or json-schema/);
    assert.match(produce, /choices: "string", "avro", "protobuf", "json-schema"/);
    assert.match(produce, /--message <name> the values' Protobuf message/);
    const consume = (await weir(['consume', '--help'])).stdout.replace(/\s+/g, ' ');
    assert.match(consume, /or avro, protobuf or json-schema \(that format in the Schema Registry wire format, printed as JSON\)/);
  });
});
