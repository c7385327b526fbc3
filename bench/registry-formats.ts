/**
 * Schema Registry formats benchmark: decode and encode cost per record of Weir's deserializers and
 * serializers (Avro, Protobuf, JSON Schema with and without validation) against plain JSON
 * (JSON.parse / JSON.stringify of the same record), in one run, in one thread. The schemas live in
 * a real registry (Apicurio, as the tests start it); each id is fetched once before timing, so
 * the numbers are the hot path: a map lookup and a synchronous decode per record.
 *
 *   bash scripts/node-env.sh node bench/registry-formats.ts [records]
 *
 * Writes bench/results/registry-formats.md.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TopicRecord } from '../src/connectors/kafka/topic-record.ts';
import { avroDeserializer } from '../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../src/connectors/schema-registry/avro-serializer.ts';
import { jsonSchemaDeserializer } from '../src/connectors/schema-registry/json-schema-deserializer.ts';
import { jsonSchemaSerializer } from '../src/connectors/schema-registry/json-schema-serializer.ts';
import { protobufDeserializer } from '../src/connectors/schema-registry/protobuf-deserializer.ts';
import { protobufSerializer } from '../src/connectors/schema-registry/protobuf-serializer.ts';
import { schemaRegistry } from '../src/connectors/schema-registry/schema-registry-client.ts';
import { startSchemaRegistry } from '../test/harness/schema-registry.ts';
import { ORDER_SCHEMA, type Order } from './jobs/kafka-formats-job.ts';

const N = Number(process.argv[2] ?? 100_000);

const avro = ORDER_SCHEMA;
const proto =
  'syntax = "proto3";\npackage dev.weir.bench;\nmessage Order {\n  int64 id = 1;\n  double amount = 2;\n  string currency = 3;\n  string note = 4;\n}\n';
const json = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { id: { type: 'integer' }, amount: { type: 'number' }, currency: { type: 'string' }, note: { type: 'string' } },
  required: ['id', 'amount', 'currency', 'note'],
};
const orders: Order[] = Array.from({ length: N }, (_, i) => ({ id: i, amount: i * 0.25, currency: i % 3 === 0 ? 'EUR' : 'USD', note: `order number ${i}` }));
const asRecord = (value: Buffer): TopicRecord => ({ topic: 'bench', partition: 0, offset: 0n, timestamp: 0n, key: null, value, headers: [], producerId: -1n });

interface Row {
  format: string;
  bytes: number;
  decodeNs: number;
  decodeCpuNs: number;
  encodeNs: number;
}

const ROUNDS = 5;

/** Time `fn` over every item, ROUNDS times after a warm-up pass over a tenth: the fastest round's wall and CPU nanoseconds per item (a shared machine makes the others noisy). */
function measure<T>(items: readonly T[], fn: (item: T) => unknown): { ns: number; cpuNs: number } {
  for (let i = 0; i < items.length / 10; i++) fn(items[i] as T);
  let best = { ns: Number.POSITIVE_INFINITY, cpuNs: Number.POSITIVE_INFINITY };
  for (let round = 0; round < ROUNDS; round++) {
    const one = measureOnce(items, fn);
    if (one.ns < best.ns) best = one;
  }
  return best;
}

function measureOnce<T>(items: readonly T[], fn: (item: T) => unknown): { ns: number; cpuNs: number } {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  let sink = 0;
  for (const item of items) sink += fn(item) === undefined ? 0 : 1;
  const ns = Number(process.hrtime.bigint() - start) / items.length;
  const used = process.cpuUsage(cpu);
  if (sink < 0) console.log(sink);
  return { ns, cpuNs: ((used.user + used.system) * 1000) / items.length };
}

const server = await startSchemaRegistry();
const rows: Row[] = [];
try {
  const registry = schemaRegistry({ url: server.url });
  const formats: {
    format: string;
    encode: (order: Order) => Buffer;
    decoder: { (record: TopicRecord): unknown; prepare?(records: TopicRecord[]): unknown };
  }[] = [
    {
      format: 'JSON (JSON.stringify / JSON.parse, no registry)',
      encode: (order) => Buffer.from(JSON.stringify(order)),
      decoder: (record: TopicRecord) => JSON.parse((record.value as Buffer).toString('utf8')),
    },
    {
      format: 'Avro (avroSerializer / avroDeserializer)',
      encode: avroSerializer<Order>({ registry, schema: avro, topic: 'bench-avro', autoRegister: true }),
      decoder: avroDeserializer<Order>({ registry }),
    },
    {
      format: 'Protobuf (protobufSerializer / protobufDeserializer)',
      encode: protobufSerializer<Order>({ registry, schema: proto, topic: 'bench-protobuf', autoRegister: true }),
      decoder: protobufDeserializer<Order>({ registry }),
    },
    {
      format: 'JSON Schema, not validated on read',
      encode: jsonSchemaSerializer<Order>({ registry, schema: json, topic: 'bench-json', autoRegister: true }),
      decoder: jsonSchemaDeserializer<Order>({ registry }),
    },
    {
      format: 'JSON Schema, validated on read',
      encode: jsonSchemaSerializer<Order>({ registry, schema: json, topic: 'bench-json', autoRegister: true }),
      decoder: jsonSchemaDeserializer<Order>({ registry, validate: true }),
    },
  ];
  for (const { format, encode, decoder } of formats) {
    const encoded = measure(orders, encode);
    const records = orders.map((order) => asRecord(encode(order)));
    await decoder.prepare?.(records.slice(0, 1));
    const decoded = measure(records, decoder);
    const bytes = records.reduce((sum, record) => sum + (record.value as Buffer).length, 0) / records.length;
    rows.push({ format, bytes, decodeNs: decoded.ns, decodeCpuNs: decoded.cpuNs, encodeNs: encoded.ns });
    process.stderr.write(`${format}: decode ${(decoded.ns / 1000).toFixed(2)} µs, encode ${(encoded.ns / 1000).toFixed(2)} µs\n`);
  }
} finally {
  await server.stop();
}

const table = [
  '| format | bytes/record | decode µs/record | decode CPU µs/record | decode records/s (one core) | encode µs/record |',
  '|---|---|---|---|---|---|',
  ...rows.map(
    (row) =>
      `| ${row.format} | ${row.bytes.toFixed(1)} | ${(row.decodeNs / 1000).toFixed(3)} | ${(row.decodeCpuNs / 1000).toFixed(3)} | ${Math.round(1e9 / row.decodeNs).toLocaleString('en-US')} | ${(row.encodeNs / 1000).toFixed(3)} |`,
  ),
].join('\n');
const report = `# Schema Registry formats: decode and encode cost per record

${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${N.toLocaleString('en-US')} records of { id: long, amount: double, currency: string, note: string },
one thread, the fastest of ${ROUNDS} rounds after a warm-up pass; schemas fetched once before timing (the hot path: a map lookup and a synchronous
decode per record). \`bash scripts/node-env.sh node bench/registry-formats.ts [records]\`.

${table}

Protobuf decodes to plain objects (protobufjs' decode, then toObject with longs as strings, enums by name,
defaults filled in): two passes per record. JSON Schema without validation is JSON.parse after the header.
`;
await writeFile(join(import.meta.dirname, 'results', 'registry-formats.md'), report);
console.log(report);
