/**
 * Kafka benchmark: Kafka -> map -> Kafka with Weir at exactly-once and at-least-once, checkpoints
 * every 100 ms and 1 s, beside the raw client pipe (fetch then produce with the same protocol code,
 * no engine) on the same broker, side by side in one run.
 *
 * - Throughput: a pre-filled input of N records, read to its end (records/s, start-up included).
 * - Visibility latency: records produced at a steady rate with their produce time inside; a
 *   read_committed reader of the output takes now - produce time for each (p50, p99).
 *
 *   npm run bench:kafka [-- <records> <rate/s> <seconds>]
 * Uses KAFKA_BROKERS, or starts a local broker for the run.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections, type TopicInfo } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { EARLIEST_OFFSET, fetchedRecords, fetchPartitions, LATEST_OFFSET, listOffsets } from '../src/connectors/kafka/partition-fetcher.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { runJob, startJob } from '../src/runtime/jobmaster/job-master.ts';

const records = Number(process.argv[2] ?? 300_000);
const rate = Number(process.argv[3] ?? 10_000);
const seconds = Number(process.argv[4] ?? 6);
const PARTITIONS = 4;
const job = join(import.meta.dirname, 'jobs', 'kafka-map-job.ts');

const broker = await ensureBroker({ log: (line) => process.stderr.write(`${line}\n`) });
const brokers = broker.brokers;
process.env.KAFKA_BROKERS = formatBootstrap(brokers);
const admin = new Admin({ clientId: 'weir-bench', bootstrapBrokers: [formatBootstrap(brokers)] });
const run = Date.now().toString(36);
let topicCount = 0;
const createTopic = async (label: string) => {
  const topic = `weir-bench-${run}-${label}-${topicCount++}`;
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  return topic;
};

const message = (topic: string, seq: number, ts: number) => ({
  topic,
  partition: seq % PARTITIONS,
  key: Buffer.from(`key-${seq % 1000}`),
  value: Buffer.from(JSON.stringify({ seq, key: `key-${seq % 1000}`, ts })),
});

async function fill(topic: string, count: number): Promise<void> {
  const connections = new ClusterConnections(brokers);
  const producer = new PlainProducer(connections);
  const now = Date.now();
  for (let first = 0; first < count; first += 5000) {
    await producer.send(
      Array.from({ length: Math.min(5000, count - first) }, (_, i) => message(topic, first + i, now)),
      -1,
    );
  }
  await connections.close();
}

/** Produces at a steady rate for `seconds`, each record carrying its produce time. Returns the count. */
async function produceSteadily(topic: string): Promise<number> {
  const connections = new ClusterConnections(brokers);
  const producer = new PlainProducer(connections);
  const started = Date.now();
  let sent = 0;
  while (Date.now() - started < seconds * 1000) {
    const due = Math.floor(((Date.now() - started) / 1000) * rate);
    if (due > sent) {
      const now = Date.now();
      await producer.send(
        Array.from({ length: due - sent }, (_, i) => message(topic, sent + i, now)),
        -1,
      );
      sent = due;
    }
    await sleep(5);
  }
  await connections.close();
  return sent;
}

/**
 * Reads a topic read_committed from the start, while it is written, until `expected()` records
 * are seen (it is unknown until the writer is done); returns each record's visibility latency.
 */
async function measureLatency(topic: string, expected: () => number, timeoutMs: number): Promise<number[]> {
  const connections = new ClusterConnections(brokers);
  const info = await connections.topic(topic);
  const topics = new Map<string, TopicInfo>([[topic, info]]);
  const positions = await listOffsets(connections, info, info.partitions, 'read_committed', EARLIEST_OFFSET);
  const latencies: number[] = [];
  const deadline = Date.now() + timeoutMs;
  while (latencies.length < expected() && Date.now() < deadline) {
    const results = await fetchPartitions(
      connections,
      topics,
      info.partitions.map((entry) => ({ topic, partition: entry.partition, offset: positions.get(entry.partition) as bigint })),
      { isolation: 'read_committed', maxWaitMs: 20 },
    );
    const now = Date.now();
    for (const result of results) {
      for (const record of fetchedRecords(result)) latencies.push(now - (JSON.parse(String(record.value)) as { ts: number }).ts);
      positions.set(result.partition, result.nextOffset);
    }
  }
  await connections.close();
  return latencies.sort((a, b) => a - b);
}

async function rawPipe(input: string, output: string, bounded: boolean, stopAt: () => boolean): Promise<number> {
  const connections = new ClusterConnections(brokers);
  const producer = new PlainProducer(connections);
  const info = await connections.topic(input);
  const topics = new Map<string, TopicInfo>([[input, info]]);
  const positions = await listOffsets(connections, info, info.partitions, 'read_committed', EARLIEST_OFFSET);
  const ends = bounded ? await listOffsets(connections, info, info.partitions, 'read_committed', LATEST_OFFSET) : undefined;
  let moved = 0;
  while (!stopAt()) {
    const todo = info.partitions.filter((entry) => ends === undefined || (positions.get(entry.partition) as bigint) < (ends.get(entry.partition) as bigint));
    if (todo.length === 0) break;
    const results = await fetchPartitions(
      connections,
      topics,
      todo.map((entry) => ({ topic: input, partition: entry.partition, offset: positions.get(entry.partition) as bigint })),
      { isolation: 'read_committed', maxWaitMs: 20, maxBytesPerPartition: 1024 * 1024 },
    );
    const out = results.flatMap((result) =>
      fetchedRecords(result).map((record) => {
        const value = JSON.parse(String(record.value)) as Record<string, unknown>;
        return {
          topic: output,
          partition: result.partition,
          key: record.key ?? Buffer.alloc(0),
          value: Buffer.from(JSON.stringify({ ...value, mapped: true })),
        };
      }),
    );
    for (const result of results) positions.set(result.partition, result.nextOffset);
    if (out.length > 0) await producer.send(out, -1);
    moved += out.length;
  }
  await connections.close();
  return moved;
}

interface Row {
  name: string;
  throughput: number;
  p50: number;
  p99: number;
  visible: number;
}
const rows: Row[] = [];
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

const cases: { name: string; guarantee?: 'exactly-once' | 'at-least-once'; interval?: string }[] = [
  { name: 'raw client pipe (fetch -> produce, acks all)' },
  { name: 'Weir exactly-once, checkpoint 100 ms', guarantee: 'exactly-once', interval: '100ms' },
  { name: 'Weir exactly-once, checkpoint 1 s', guarantee: 'exactly-once', interval: '1s' },
  { name: 'Weir at-least-once, checkpoint 100 ms', guarantee: 'at-least-once', interval: '100ms' },
  { name: 'Weir at-least-once, checkpoint 1 s', guarantee: 'at-least-once', interval: '1s' },
];

try {
  for (const entry of cases) {
    process.stderr.write(`${entry.name}...\n`);
    const folder = await mkdtemp(join(tmpdir(), 'weir-bench-kafka-'));
    // Throughput over a pre-filled input.
    const input = await createTopic('in');
    const output = await createTopic('out');
    await fill(input, records);
    const config = (bounded: boolean) => ({
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: entry.interval ?? '1s', storage: join(folder, bounded ? 'bounded' : 'steady') },
    });
    Object.assign(process.env, { BK_INPUT: input, BK_OUTPUT: output, BK_GUARANTEE: entry.guarantee ?? 'exactly-once', BK_BOUNDED: '1' });
    const started = performance.now();
    if (entry.guarantee === undefined) await rawPipe(input, output, true, () => false);
    else await runJob({ job, config: config(true) });
    const throughput = records / ((performance.now() - started) / 1000);

    // Visibility latency at a steady rate.
    const steadyIn = await createTopic('steady-in');
    const steadyOut = await createTopic('steady-out');
    Object.assign(process.env, { BK_INPUT: steadyIn, BK_OUTPUT: steadyOut, BK_BOUNDED: '0' });
    let stop = false;
    const pipe = entry.guarantee === undefined ? rawPipe(steadyIn, steadyOut, false, () => stop) : undefined;
    const client = entry.guarantee === undefined ? undefined : await startJob({ job, config: config(false) });
    await sleep(1500); // let the job start
    let produced = Number.POSITIVE_INFINITY;
    const [latencies] = await Promise.all([
      measureLatency(steadyOut, () => produced, (seconds + 30) * 1000),
      produceSteadily(steadyIn).then((count) => {
        produced = count;
      }),
    ]);
    stop = true;
    await pipe;
    if (client !== undefined) {
      await client.stopWithSavepoint();
      await client.result;
    }
    await rm(folder, { recursive: true, force: true });
    rows.push({ name: entry.name, throughput, p50: percentile(latencies, 50), p99: percentile(latencies, 99), visible: latencies.length });
  }
} finally {
  await admin.close();
  await broker.release();
}

const raw = rows[0] as Row;
console.log(`\nKafka -> map -> Kafka, parallelism 2, ${PARTITIONS} partitions; throughput over ${records.toLocaleString('en')} records (start-up included);`);
console.log(`latency at ${rate.toLocaleString('en')} records/s for ${seconds} s, produce time to visible for a read_committed reader\n`);
console.log('| case | records/s | vs raw | p50 latency ms | p99 latency ms | records seen |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.name} | ${Math.round(row.throughput).toLocaleString('en')} | ${(row.throughput / raw.throughput).toFixed(2)} | ${row.p50} | ${row.p99} | ${row.visible} |`,
  );
}
