/**
 * Jobs reading and writing Protobuf and JSON Schema in the Schema Registry wire format, exactly-once,
 * through a real registry (Apicurio, started by the harness) and the real broker. Inputs are laid
 * out by hand as Confluent's serializers write them (header, message indexes, protobufjs payload;
 * header, JSON text), with bad records among them: a wrong magic byte, a schema id the registry does
 * not know, a payload that does not decode (Protobuf) or does not validate / is not JSON (JSON
 * Schema). Under { deadLetter } the read_committed output (decoded and validated by Weir's
 * deserializers) plus the dead letters is the input, each record once, each dead letter with its
 * reason; under 'skip' the bad records are counted; under 'fail' the job fails naming topic,
 * partition and offset. An output schema the subject's compatibility rule rejects stops the job
 * before it starts, naming the subject and the rule.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import protobufjs from 'protobufjs';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic, type TopicRecord } from '../../../src/connectors/kafka/topic-reader.ts';
import { jsonSchemaDeserializer } from '../../../src/connectors/schema-registry/json-schema-deserializer.ts';
import { protobufDeserializer } from '../../../src/connectors/schema-registry/protobuf-deserializer.ts';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';
import { jobTopics, produceValues } from './job-topics.ts';
import { orderJsonSchema, orderProto, type Total, totalJsonSchema, totalProto } from './protobuf-json-registry-job.ts';
import { recordsSkipped } from './registry-job-pipeline.ts';

const brokers = testBrokers();
const job = join(import.meta.dirname, 'protobuf-json-registry-job.ts');
const N = 1000;
const UNKNOWN_ID = 987654;
const Order = protobufjs.parse(orderProto, { keepCase: true }).root.lookupType('dev.weir.test.Order');
/** Which input records are bad, and how. */
const badness = (seq: number): 'magic' | 'unknown-id' | 'payload' | undefined =>
  seq % 100 === 7 ? 'magic' : seq % 100 === 13 ? 'unknown-id' : seq % 100 === 4 ? 'payload' : undefined;
const goodSeqs = Array.from({ length: N }, (_, seq) => seq).filter((seq) => badness(seq) === undefined);
const badSeqs = Array.from({ length: N }, (_, seq) => seq).filter((seq) => badness(seq) !== undefined);
const order = (seq: number) => ({ id: seq, amount: seq * 0.25, currency: seq % 3 === 0 ? 'EUR' : 'USD' });

const cleanups: (() => Promise<void>)[] = [];
let server: SchemaRegistryServer;
before(async () => {
  server = await startSchemaRegistry();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await server?.stop();
});

async function register(subject: string, schemaType: 'PROTOBUF' | 'JSON', schema: string): Promise<number> {
  const answer = await server.request<{ id: number }>('POST', `/subjects/${subject}/versions`, { schemaType, schema });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.id;
}

/** Input, output and dead-letter topics (2 partitions each); the schemas registered; N input records in `direction`'s input format, seq % 2 the partition. */
async function topics(label: string, direction: 'protobuf-to-json' | 'json-to-protobuf', options: { registerOutput?: boolean } = {}) {
  const { input, output, dlq, folder } = await jobTopics(label, cleanups);
  const fromProtobuf = direction === 'protobuf-to-json';
  const id = await register(`${input}-value`, fromProtobuf ? 'PROTOBUF' : 'JSON', fromProtobuf ? orderProto : JSON.stringify(orderJsonSchema));
  if (options.registerOutput !== false)
    await register(`${output}-value`, fromProtobuf ? 'JSON' : 'PROTOBUF', fromProtobuf ? JSON.stringify(totalJsonSchema) : totalProto);
  const values = Array.from({ length: N }, (_, seq): Buffer => {
    const bad = badness(seq);
    const head = Buffer.from([0, 0, 0, 0, 0]);
    head.writeInt32BE(bad === 'unknown-id' ? UNKNOWN_ID : id, 1);
    if (bad === 'magic') head[0] = 1;
    if (fromProtobuf) {
      const body = bad === 'payload' ? Buffer.from([0x1a, 0x10, 0x45]) : Buffer.from(Order.encode(Order.fromObject(order(seq))).finish());
      return Buffer.concat([head, Buffer.from([0]), body]);
    }
    const text = bad === 'payload' ? (seq % 200 === 4 ? `{"id": ${seq}, "amount": "lots", "currency": "EUR"}` : `{"id": ${seq},`) : JSON.stringify(order(seq));
    return Buffer.concat([head, Buffer.from(text)]);
  });
  await produceValues(input, values);
  Object.assign(process.env, {
    KAFKA_BROKERS: formatBootstrap(brokers),
    PJ_REGISTRY: server.url,
    PJ_INPUT: input,
    PJ_OUTPUT: output,
    PJ_DLQ: dlq,
    PJ_DIRECTION: direction,
  });
  return { input, output, dlq, folder };
}

/** The output read read_committed, decoded by Weir's deserializer of its format (JSON validated). */
async function totals(output: string, format: 'json' | 'protobuf'): Promise<{ records: TopicRecord[]; totals: Total[] }> {
  const records = await readTopic({ bootstrap: brokers, topic: output });
  const deserializer =
    format === 'json'
      ? jsonSchemaDeserializer<Total>({ registry: { url: server.url }, validate: true })
      : protobufDeserializer<Total>({ registry: { url: server.url }, longs: 'number' });
  await deserializer.prepare(records);
  return { records, totals: records.map((record) => deserializer(record)) };
}

const header = (record: TopicRecord, name: string) => record.headers.find(([key]) => key?.toString() === name)?.[1]?.toString();
const seqOfLetter = (letter: TopicRecord) => Number(letter.key?.toString().slice(2));
const config = (folder: string, parallelism = 2) => ({ parallelism, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } });
const expectedTotal = (seq: number): Total => ({ id: seq, cents: Math.round(seq * 25), label: `${seq % 3 === 0 ? 'EUR' : 'USD'}-${seq}` });

describe('jobs reading and writing Protobuf and JSON Schema through a real Schema Registry', () => {
  test('Protobuf in, JSON Schema out, dead letters: read_committed output (validated) plus dead letters is the input, each once', async () => {
    const { input, output, dlq, folder } = await topics('pj-dlq', 'protobuf-to-json');
    process.env.PJ_POLICY = 'dlq';
    const client = await startJob({ job, config: config(folder) });
    await client.result;
    const out = await totals(output, 'json');
    const letters = await readTopic({ bootstrap: brokers, topic: dlq });
    assert.deepEqual(
      [...out.totals.map((total) => total.id), ...letters.map(seqOfLetter)].sort((a, b) => a - b),
      Array.from({ length: N }, (_, seq) => seq),
      'each input record exactly once in output plus dead letters',
    );
    assert.deepEqual(
      out.totals.map((total) => total.id).sort((a, b) => a - b),
      goodSeqs,
    );
    for (const total of out.totals) assert.deepEqual(total, expectedTotal(total.id));
    const outputId = (await server.request<{ id: number }>('GET', `/subjects/${output}-value/versions/latest`)).body.id;
    for (const record of out.records) assert.equal(record.value?.readInt32BE(1), outputId, 'written with the registered schema id');
    for (const letter of letters) {
      const seq = seqOfLetter(letter);
      assert.equal(header(letter, 'weir.dlq.topic'), input);
      assert.equal(header(letter, 'weir.dlq.offset'), String(Math.floor(seq / 2)));
      const reason = {
        magic: /unknown magic byte 1/,
        'unknown-id': new RegExp(`schema id ${UNKNOWN_ID} is unknown to schema registry`),
        payload: /the Protobuf payload \(schema id \d+, message dev\.weir\.test\.Order\) does not decode/,
      }[badness(seq) as string] as RegExp;
      assert.match(header(letter, 'weir.dlq.error.message') ?? '', reason);
    }
  });

  test("JSON Schema in (validated), Protobuf out, 'skip': the output is the good records, the bad ones counted", async () => {
    const { output, folder } = await topics('pj-skip', 'json-to-protobuf');
    process.env.PJ_POLICY = 'skip';
    const client = await startJob({ job, config: config(folder) });
    await client.result;
    assert.equal(recordsSkipped(client), badSeqs.length);
    const out = await totals(output, 'protobuf');
    assert.deepEqual(
      out.totals.map((total) => total.id).sort((a, b) => a - b),
      goodSeqs,
    );
    for (const total of out.totals) assert.deepEqual(total, expectedTotal(total.id));
  });

  test("'fail': the job fails naming topic, partition, offset and why (a Protobuf payload that does not decode)", async () => {
    const { input, folder } = await topics('pj-fail', 'protobuf-to-json');
    process.env.PJ_POLICY = 'fail';
    // Both partitions are read: the first bad record the job meets fails it, seq 7 (partition 1 offset 3, a wrong magic byte)
    // or seq 4 (partition 0 offset 2, a payload that does not decode). Either way the message names the place and the reason.
    const client = await startJob({ job, config: config(folder, 1) });
    await assert.rejects(client.result, (error: Error & { code?: string }) => {
      assert.equal(error.code, 'DESERIALIZATION_FAILED', error.message);
      assert.match(
        error.message,
        new RegExp(`cannot deserialize the record at ${input}/(1 offset 3 .*unknown magic byte 1|0 offset 2 .*the Protobuf payload .* does not decode)`),
      );
      return true;
    });
  });

  test("an output schema the subject's compatibility rule rejects: the job does not start, naming the subject and the rule", async () => {
    const { output, folder } = await topics('pj-compat', 'protobuf-to-json', { registerOutput: false });
    await server.request('PUT', `/config/${output}-value`, { compatibility: 'BACKWARD' });
    // The subject's latest version says cents is a string: the job's Total (cents an integer) breaks it.
    const earlier = { ...totalJsonSchema, properties: { ...totalJsonSchema.properties, cents: { type: 'string' } } };
    await register(`${output}-value`, 'JSON', JSON.stringify(earlier));
    process.env.PJ_POLICY = 'fail';
    await assert.rejects(startJob({ job, config: config(folder, 1) }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'PREFLIGHT_FAILED', error.message);
      assert.match(
        error.message,
        new RegExp(`kafka sink .*"output".*the JSON Schema Total it writes breaks subject "${output}-value"'s compatibility rule BACKWARD`),
      );
      assert.match(error.message, /cents/);
      return true;
    });
  });
});
