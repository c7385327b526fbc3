/**
 * `weir produce` / `weir consume` in Avro through the real registry (Apicurio, started by the
 * harness) and the real broker (issue 37 point 5): a produce whose subject does not hold the schema
 * is refused naming the subject (nothing written); with --auto-register (the registry from
 * WEIR_SCHEMA_REGISTRY_URL) it registers it and writes JSON lines, plain JSON and Avro's JSON
 * encoding alike, as Avro in the wire format, keys too; a second produce finds the registered
 * schema; the reference client (@kafkajs/confluent-schema-registry) decodes every record, and
 * `weir consume --value-format avro` prints them back as JSON, which `weir produce` takes again.
 * A line the schema does not fit is one error naming the line and the field; the registry's
 * password shows in no output.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { weir } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';
import { weirWithInput } from './weir-with-input.ts';

const brokers = testBrokers();
const kafkaEnv = { KAFKA_BROKERS: formatBootstrap(brokers) };
const PASSWORD = 'cli-Pa55-secret';
const order = {
  type: 'record',
  name: 'Order',
  namespace: 'dev.weir.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'amount', type: 'double' },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};

describe('weir produce / consume with Avro through a real Schema Registry', () => {
  let server: SchemaRegistryServer;
  let folder: string;
  let schemaFile: string;
  let keySchemaFile: string;
  let topic: string;
  let removeTopic: () => Promise<void>;
  before(async () => {
    [server, { topic, remove: removeTopic }] = await Promise.all([startSchemaRegistry(), createTestTopic(brokers, 'cli-avro', 2)]);
    folder = await mkdtemp(join(tmpdir(), 'weir-cli-avro-'));
    schemaFile = join(folder, 'order.avsc');
    keySchemaFile = join(folder, 'key.avsc');
    await writeFile(schemaFile, JSON.stringify(order, null, 2));
    await writeFile(keySchemaFile, '"string"\n');
  });
  after(async () => {
    await server?.stop();
    await removeTopic?.();
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });

  test('refuses a subject that does not hold the schema, then writes and reads Avro both ways', async () => {
    const lines = [
      '{"id": 1, "amount": 9.5, "note": null}',
      'k-2\t{"id": 2, "amount": 0.25, "note": "plain json"}',
      '{"id": 3, "amount": 1, "note": {"string": "avro json"}}',
    ];

    // Not registered, --auto-register off: refused naming the subject; nothing written.
    const refused = await weirWithInput(
      ['produce', topic, '--value-format', 'avro', '--schema', schemaFile, '--registry', server.url],
      `${lines.join('\n')}\n`,
    );
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, new RegExp(`subject "${topic}-value" does not hold the schema dev.weir.test.Order`));
    assert.match(refused.stderr, /--auto-register/);
    assert.equal((await readTopic({ bootstrap: formatBootstrap(brokers), topic })).length, 0, 'nothing written');
    assert.equal((await server.request('GET', `/subjects/${topic}-value/versions`)).status, 404, 'nothing registered');

    // --auto-register, the registry (and its credentials) from the environment: Apicurio runs
    // without authentication and ignores the header; the point is the password printed nowhere.
    const registryEnv = { WEIR_SCHEMA_REGISTRY_URL: server.url, WEIR_SCHEMA_REGISTRY_USER: 'weir', WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD };
    const produced = await weirWithInput(
      ['produce', topic, '--value-format', 'avro', '--schema', schemaFile, '--auto-register'],
      `${lines.join('\n')}\n`,
      registryEnv,
    );
    assert.equal(produced.code, 0, produced.stderr);
    assert.match(produced.stderr, new RegExp(`^produced 3 records to ${topic}$`, 'm'));
    const versions = await server.request<number[]>('GET', `/subjects/${topic}-value/versions`);
    assert.deepEqual(versions.body, [1], 'registered once, under the topic strategy subject');

    // Now registered: a produce without --auto-register finds it; Avro keys too (subject <topic>-key, auto-registered).
    const keyed = await weirWithInput(
      [
        'produce',
        topic,
        '--value-format',
        'avro',
        '--schema',
        schemaFile,
        '--key-format',
        'avro',
        '--key-schema',
        keySchemaFile,
        '--auto-register',
        '--registry',
        server.url,
        '--transactional',
      ],
      '"key-4"\t{"id": 4, "amount": 4.5}\n',
    );
    assert.equal(keyed.code, 0, keyed.stderr);

    // The reference client decodes every record Weir wrote.
    const reference = new SchemaRegistry({ host: server.url });
    const records = await readTopic({ bootstrap: formatBootstrap(brokers), topic });
    assert.equal(records.length, 4);
    const decoded = await Promise.all(
      records.map(async (record) => ({
        key: record.key === null ? null : record.key[0] === 0 ? await reference.decode(record.key) : record.key.toString(),
        value: { ...(await reference.decode(record.value as Buffer)) }, // a plain object (avsc decodes to a class named after the record)
      })),
    );
    decoded.sort((a, b) => a.value.id - b.value.id);
    assert.deepEqual(decoded, [
      { key: null, value: { id: 1, amount: 9.5, note: null } },
      { key: 'k-2', value: { id: 2, amount: 0.25, note: 'plain json' } },
      { key: null, value: { id: 3, amount: 1, note: 'avro json' } },
      { key: 'key-4', value: { id: 4, amount: 4.5, note: null } },
    ]);

    // weir consume decodes them: Avro's JSON encoding, nested in --json's object.
    const consumed = await weir(['consume', topic, '--value-format', 'avro', '--registry', server.url, '--json'], {
      ...kafkaEnv,
      WEIR_SCHEMA_REGISTRY_USER: 'weir', // the url from --registry, the credentials from the environment
      WEIR_SCHEMA_REGISTRY_PASSWORD: PASSWORD,
    });
    assert.equal(consumed.code, 0, consumed.stderr);
    const printed = consumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: string | null; value: { id: number; note: unknown } });
    printed.sort((a, b) => a.value.id - b.value.id);
    assert.deepEqual(
      printed.map((record) => record.value),
      [
        { id: 1, amount: 9.5, note: null },
        { id: 2, amount: 0.25, note: { string: 'plain json' } },
        { id: 3, amount: 1, note: { string: 'avro json' } },
        { id: 4, amount: 4.5, note: null },
      ],
    );
    assert.equal(printed[3]?.key?.startsWith('\u0000'), true, 'the Avro key printed as text without --key-format avro');
    // Both formats, tab-separated lines (the registry from the environment).
    const both = await weir(['consume', topic, '--value-format', 'avro', '--key-format', 'avro'], { ...kafkaEnv, ...registryEnv });
    assert.equal(both.code, 0, both.stderr);
    assert.match(both.stdout, /^\d\t\d+\t"key-4"\t\{"id":4,"amount":4\.5,"note":null\}$/m);
    assert.match(both.stderr, /partition \d offset \d+: the key is not Avro of the registry: 3 bytes are too few/);

    // What consume prints, produce takes again.
    const again = await weirWithInput(
      ['produce', topic, '--value-format', 'avro', '--schema', schemaFile, '--registry', server.url],
      `${printed.map((record) => JSON.stringify(record.value)).join('\n')}\n`,
    );
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await readTopic({ bootstrap: formatBootstrap(brokers), topic })).length, 8);

    for (const output of [refused, produced, keyed, consumed, both, again]) assert.ok(!`${output.stdout}${output.stderr}`.includes(PASSWORD));
  });

  test('a line the schema does not fit is one error naming the line and the field', async () => {
    const bad = await weirWithInput(
      ['produce', topic, '--value-format', 'avro', '--schema', schemaFile, '--registry', server.url],
      '{"id": 5, "amount": 1.5}\n{"id": 6, "amount": "lots"}\n',
    );
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /stdin line 2: the value does not fit the schema: amount: "lots" is not "double"/);
    const noSchema = await weir(['produce', topic, '--value-format', 'avro', '--registry', server.url], kafkaEnv);
    assert.equal(noSchema.code, 1);
    assert.match(noSchema.stderr, /--value-format avro needs the schema the records are written with/);
    const noRegistry = await weir(['consume', topic, '--value-format', 'avro'], { ...kafkaEnv, WEIR_SCHEMA_REGISTRY_URL: '' });
    assert.equal(noRegistry.code, 1);
    assert.match(noRegistry.stderr, /--value-format avro needs a Schema Registry.*\n.*--registry <url>.*WEIR_SCHEMA_REGISTRY_URL/);
  });
});
