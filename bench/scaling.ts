/**
 * How Weir's cost grows as the work grows, Weir alone, each case one `weir run` process (its peak
 * RSS is its own), side by side in one run:
 *
 * - records 1M -> 2M -> 5M (1,000 keys): records/s and peak RSS;
 * - keys 1k -> 100k -> 1M (2M records, checkpoints every 1 s): records/s, peak RSS, the checkpoint's
 *   duration (the heap snapshot is synchronous on the task thread: its cost to the job is the
 *   slowdown against the 1k-key case) and size;
 * - Kafka partitions 4 -> 16 -> 64 (1M records in a bounded topic): records/s and peak RSS;
 * - operators in a chain 1 -> 4 -> 16 maps (2M records): records/s.
 *
 *   npm run bench:scaling [-- --quick]   (--quick: a fifth of the records)
 * Uses KAFKA_BROKERS, or starts a local broker for the Kafka cases. Writes bench/results/scaling.md.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { waitForTopics } from './compare/kafka-io.ts';
import { markdownTable } from './compare/report.ts';
import { PeakRss } from './compare/systems.ts';

const scale = process.argv.includes('--quick') ? 0.2 : 1;
const root = join(import.meta.dirname, '..');
const job = join(import.meta.dirname, 'jobs', 'scaling-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Result {
  seconds: number;
  recordsPerSecond: number;
  peakMb: number;
  checkpoints: { ms: number; bytes: number }[];
}

/** Runs the scaling job once in its own process (parallelism 1, one worker) and measures it. */
async function runCase(records: number, env: Record<string, string>, checkpoints: boolean): Promise<Result> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bench-scaling-'));
  const args = [join(root, 'bin', 'weir.js'), 'run', job, '--parallelism', '1', '--workers', '1', '--no-ui', '--log-level', 'debug'];
  if (checkpoints) args.push('--checkpoint-interval', '1s', '--checkpoint-storage', join(folder, 'checkpoints'));
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const rss = new PeakRss(child.pid as number);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  rss.stop();
  const seconds = (performance.now() - started) / 1000;
  await rm(folder, { recursive: true, force: true });
  if (code !== 0) throw new Error(`the case ${JSON.stringify(env)} exited with ${code}:\n${stderr.slice(-2000)}`);
  const completed = [...stderr.matchAll(/checkpoint \d+ completed in (\d+) ms \((\d+) bytes of state\)/g)].map((match) => ({
    ms: Number(match[1]),
    bytes: Number(match[2]),
  }));
  return { seconds, recordsPerSecond: records / seconds, peakMb: rss.peakKb / 1024, checkpoints: completed };
}

const fmt = (value: number, digits = 0) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (value: number, base: number) => fmt(value / base, 2);
const lines = [
  '# How cost grows with the work',
  '',
  `\`npm run bench:scaling${scale < 1 ? ' -- --quick' : ''}\`, ${new Date().toISOString().slice(0, 10)}, this machine; parallelism 1, one worker; times include start-up.`,
  '',
];

// Untimed, first: Node's compile cache then holds every module the job's threads load, so no
// measured case is the first run to strip and compile them (see bench/compare/prime-compile-cache.ts).
log('priming the compile cache (untimed)');
await runCase(Math.round(100_000 * scale), { SC_RECORDS: String(Math.round(100_000 * scale)), SC_KEYS: '1000' }, true);

// Records.
const recordRows: string[][] = [];
let recordBase: Result | undefined;
for (const millions of [1, 2, 5]) {
  const records = Math.round(millions * 1_000_000 * scale);
  log(`records: ${records}`);
  const result = await runCase(records, { SC_RECORDS: String(records), SC_KEYS: '1000' }, false);
  recordBase ??= result;
  recordRows.push([fmt(records), fmt(result.recordsPerSecond), ratio(result.recordsPerSecond, recordBase.recordsPerSecond), fmt(result.peakMb)]);
}
lines.push('## Records (1,000 keys)', '', ...markdownTable(['records', 'records/s', 'ratio', 'peak RSS (MB)'], recordRows), '');

// Keys.
const keyRows: string[][] = [];
let keyBase: Result | undefined;
const keyRecords = Math.round(2_000_000 * scale);
for (const keys of [1_000, 100_000, 1_000_000]) {
  log(`keys: ${keys}`);
  const result = await runCase(keyRecords, { SC_RECORDS: String(keyRecords), SC_KEYS: String(keys) }, true);
  keyBase ??= result;
  const last = result.checkpoints.at(-1);
  const slowest = Math.max(0, ...result.checkpoints.map((entry) => entry.ms));
  keyRows.push([
    fmt(keys),
    fmt(result.recordsPerSecond),
    ratio(result.recordsPerSecond, keyBase.recordsPerSecond),
    fmt(result.peakMb),
    fmt(result.checkpoints.length),
    fmt(slowest),
    last === undefined ? '-' : fmt(last.bytes / 1024 / 1024, 1),
  ]);
}
lines.push(
  `## Keys (${fmt(keyRecords)} records, checkpoints every 1 s)`,
  '',
  ...markdownTable(['keys', 'records/s', 'ratio', 'peak RSS (MB)', 'checkpoints', 'slowest checkpoint (ms)', 'last checkpoint (MB)'], keyRows),
  '',
);

// Operators in a chain.
const chainRows: string[][] = [];
let chainBase: Result | undefined;
for (const chain of [1, 4, 16]) {
  log(`chain: ${chain}`);
  const result = await runCase(keyRecords, { SC_RECORDS: String(keyRecords), SC_KEYS: '1000', SC_CHAIN: String(chain) }, false);
  chainBase ??= result;
  chainRows.push([fmt(chain), fmt(result.recordsPerSecond), ratio(result.recordsPerSecond, chainBase.recordsPerSecond), fmt(result.peakMb)]);
}
lines.push(`## Maps in the chain (${fmt(keyRecords)} records)`, '', ...markdownTable(['maps', 'records/s', 'ratio', 'peak RSS (MB)'], chainRows), '');

// Kafka partitions.
const broker = await ensureBroker({ log });
try {
  const bootstrap = formatBootstrap(broker.brokers);
  const admin = new Admin({ clientId: 'weir-bench-scaling', bootstrapBrokers: [bootstrap] });
  const partitionRows: string[][] = [];
  let partitionBase: Result | undefined;
  const kafkaRecords = Math.round(1_000_000 * scale);
  for (const partitions of [4, 16, 64]) {
    const topic = `weir-bench-scaling-${Date.now().toString(36)}-${partitions}`;
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
    await waitForTopics(broker.brokers, [topic], partitions);
    log(`partitions: ${partitions} (filling ${kafkaRecords} records)`);
    const connections = new ClusterConnections(broker.brokers);
    const producer = new PlainProducer(connections);
    for (let first = 0; first < kafkaRecords; first += 10_000) {
      const batch = [];
      for (let seq = first; seq < Math.min(kafkaRecords, first + 10_000); seq++) {
        batch.push({ topic, partition: seq % partitions, value: Buffer.from(JSON.stringify({ key: `key-${seq % 1000}`, amount: seq % 10 })) });
      }
      await producer.send(batch, 1);
    }
    await connections.close();
    const result = await runCase(kafkaRecords, { SC_SOURCE: 'kafka', SC_INPUT: topic, KAFKA_BROKERS: bootstrap }, false);
    partitionBase ??= result;
    partitionRows.push([fmt(partitions), fmt(result.recordsPerSecond), ratio(result.recordsPerSecond, partitionBase.recordsPerSecond), fmt(result.peakMb)]);
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  }
  await admin.close();
  lines.push(
    `## Kafka partitions (${fmt(kafkaRecords)} records in a bounded topic)`,
    '',
    ...markdownTable(['partitions', 'records/s', 'ratio', 'peak RSS (MB)'], partitionRows),
    '',
  );
} finally {
  await broker.release();
}

await writeFile(join(import.meta.dirname, 'results', 'scaling.md'), lines.join('\n'));
console.log(lines.join('\n'));
