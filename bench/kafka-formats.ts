/**
 * Formats in a real job (issue 37 point 7): Kafka -> map -> Kafka, exactly-once, parallelism 2, the
 * records in JSON against Avro through a real Schema Registry (Apicurio, started here as the tests
 * start it), side by side in one run, alternated. For each: records/s over a pre-filled input read
 * to its end (start-up included) and the CPU of the whole process (job master and workers) per
 * record. `npm run bench:registry` measures the serializers alone.
 *
 *   npm run bench:kafka-formats [-- <records> <rounds>]
 * Uses KAFKA_BROKERS, or starts a local broker for the run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { avroSerializer } from '../src/connectors/schema-registry/avro-serializer.ts';
import { schemaRegistry } from '../src/connectors/schema-registry/schema-registry-client.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { runJob } from '../src/runtime/jobmaster/job-master.ts';
import { startSchemaRegistry } from '../test/harness/schema-registry.ts';
import { markdownTable } from './compare/report.ts';
import { ORDER_SCHEMA, type Order } from './jobs/kafka-formats-job.ts';

const records = Number(process.argv[2] ?? 300_000);
const rounds = Number(process.argv[3] ?? 2);
const PARTITIONS = 4;
const job = join(import.meta.dirname, 'jobs', 'kafka-formats-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);

const broker = await ensureBroker({ log });
process.env.KAFKA_BROKERS = formatBootstrap(broker.brokers);
log('starting the Schema Registry (Apicurio)...');
const registryServer = await startSchemaRegistry();
process.env.WEIR_SCHEMA_REGISTRY_URL = registryServer.url;
const admin = new Admin({ clientId: 'weir-bench-formats', bootstrapBrokers: [formatBootstrap(broker.brokers)] });
const run = Date.now().toString(36);
let topics = 0;
const createTopic = async (label: string) => {
  const topic = `weir-bench-formats-${run}-${label}-${topics++}`;
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  return topic;
};
const order = (i: number): Order => ({ id: i, amount: i * 0.25, currency: i % 3 === 0 ? 'EUR' : 'USD', note: `order number ${i}` });

/** Writes the input in `format`, 5,000 records a request. */
async function fill(topic: string, format: 'json' | 'avro'): Promise<void> {
  const encode =
    format === 'json'
      ? (value: Order) => Buffer.from(JSON.stringify(value))
      : avroSerializer<Order>({ registry: schemaRegistry(), schema: ORDER_SCHEMA, topic, autoRegister: true });
  const connections = new ClusterConnections(broker.brokers);
  const producer = new PlainProducer(connections);
  for (let first = 0; first < records; first += 5000) {
    const batch = Array.from({ length: Math.min(5000, records - first) }, (_, i) => {
      const value = order(first + i);
      return { topic, partition: (first + i) % PARTITIONS, key: Buffer.from(String(value.id % 1000)), value: Buffer.from(encode(value)) };
    });
    await producer.send(batch, -1);
  }
  await connections.close();
}

interface Result {
  format: string;
  recordsPerSecond: number;
  cpuMicrosPerRecord: number;
}
const results: Result[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    for (const format of ['json', 'avro'] as const) {
      const input = await createTopic(`${format}-in`);
      const output = await createTopic(`${format}-out`);
      await fill(input, format);
      const folder = await mkdtemp(join(tmpdir(), 'weir-bench-formats-'));
      Object.assign(process.env, { BF_INPUT: input, BF_OUTPUT: output, BF_FORMAT: format });
      const cpu = process.cpuUsage();
      const started = performance.now();
      await runJob({ job, config: { parallelism: 2, workers: 2, checkpointing: { interval: '1s', storage: join(folder, 'checkpoints') } } });
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      await rm(folder, { recursive: true, force: true });
      const result = { format, recordsPerSecond: records / seconds, cpuMicrosPerRecord: (used.user + used.system) / records };
      results.push(result);
      log(
        `round ${round + 1}, ${format}: ${Math.round(result.recordsPerSecond).toLocaleString('en')} records/s, ${result.cpuMicrosPerRecord.toFixed(2)} µs CPU per record`,
      );
    }
  }
} finally {
  await admin.close();
  await registryServer.stop();
  await broker.release();
}

const rows = results.map((result, index) => {
  const json = results[index - (index % 2)] as Result;
  return [
    String(Math.floor(index / 2) + 1),
    result.format === 'json' ? 'JSON (kafkaDeserializers.json, JSON.stringify)' : 'Avro (avroDeserializer, avroSerializer, registry)',
    Math.round(result.recordsPerSecond).toLocaleString('en'),
    result.cpuMicrosPerRecord.toFixed(2),
    (result.recordsPerSecond / json.recordsPerSecond).toFixed(2),
    (result.cpuMicrosPerRecord / json.cpuMicrosPerRecord).toFixed(2),
  ];
});
const text = [
  '# Formats in a job: JSON against Avro through the Schema Registry (issue 37)',
  '',
  `\`npm run bench:kafka-formats -- ${records} ${rounds}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, this machine (2 cores, shared), Node ${process.versions.node}. Kafka -> map -> Kafka, exactly-once, checkpoints every 1 s, parallelism 2 on 2 worker threads, ${PARTITIONS} partitions; ${records.toLocaleString('en')} records of { id, amount, currency, note } read to the input's end (start-up included). CPU: the whole process (job master and worker threads) per record. Rounds alternate the formats; ratios are against the JSON run of the same round.`,
  '',
  ...markdownTable(['round', 'format', 'records/s', 'CPU µs/record', 'records/s vs JSON', 'CPU vs JSON'], rows),
  '',
].join('\n');
await writeFile(join(import.meta.dirname, 'results', 'kafka-formats.md'), text);
process.stdout.write(`${text}\n`);
