/**
 * Issue 33's crash goal: a job whose async stage is slower than its input, checkpoints every second,
 * SIGKILLed every 5-10 s: every run completes a checkpoint and the job catches up.
 *
 * The job is test/fixtures/jobs/async-enrich-job.ts (a 4-partition Kafka input -> orderedWait in a task
 * of its own behind a forward edge, and unorderedWait behind a rebalance, against an HTTP service answering in 20-30 ms,
 * capacity 20 -> exactly-once Kafka outputs), parallelism 2, over a pre-filled input. `weir run` is
 * started, SIGKILLed after 5-10 s, and started again, until both outputs hold the whole input read
 * read_committed; then each output is audited (every input record exactly once). Per run: how long
 * it lived, the checkpoints it completed, when its first one completed after the process started,
 * and the outputs' progress.
 *
 *   npm run bench:crash-loop [-- <records>] [--unaligned]      (default 30000, aligned checkpoints)
 * Uses KAFKA_BROKERS, or starts a local broker for the run. Writes bench/results/crash-loop.md, or
 * crash-loop-unaligned.md with --unaligned (`checkpointing.unaligned`: the barrier overtakes the
 * records in flight, so a restart's first checkpoint does not wait behind the back pressure).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../src/connectors/kafka/topic-reader.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { markdownTable } from './compare/report.ts';

const unaligned = process.argv.includes('--unaligned');
const records = Number(process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 30_000);
const MAX_RUNS = 40;
const root = join(import.meta.dirname, '..');
const job = join(root, 'test', 'fixtures', 'jobs', 'async-enrich-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);
const logDir = process.env.CRASH_LOOP_LOGS;
const broker = await ensureBroker({ log });
const brokers = broker.brokers;
const bootstrap = formatBootstrap(brokers);
const id = randomBytes(3).toString('hex');
const topics = { input: `weir-crash-${id}-in`, ordered: `weir-crash-${id}-ordered`, unordered: `weir-crash-${id}-unordered` };
const admin = new Admin({ clientId: 'weir-bench-crash-loop', bootstrapBrokers: [bootstrap] });
await admin.createTopics({ topics: Object.values(topics), partitions: 4, replicas: 1 });

// The input, keyed round the partitions.
const connections = new ClusterConnections(brokers);
const producer = new PlainProducer(connections);
for (let first = 0; first < records; first += 5000) {
  const batch = [];
  for (let seq = first; seq < Math.min(records, first + 5000); seq++) {
    batch.push({ topic: topics.input, partition: seq % 4, key: Buffer.from(`k${seq % 97}`), value: Buffer.from(JSON.stringify({ seq, key: `k${seq % 97}` })) });
  }
  await producer.send(batch, -1);
}
await connections.close();

// The slow service: 20-30 ms an answer.
const service = createServer((request, response) => {
  const seq = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('seq'));
  setTimeout(
    () => {
      if (!response.destroyed) response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ score: seq % 1000 }));
    },
    20 + Math.floor(Math.random() * 10),
  );
});
service.keepAliveTimeout = 30_000;
await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
const serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;

const folder = await mkdtemp(join(tmpdir(), 'weir-crash-loop-'));
const config = join(folder, 'config.json');
await writeFile(config, JSON.stringify({ checkpointing: { interval: '1s', storage: join(folder, 'checkpoints'), unaligned } }));

const seqs = async (topic: string) =>
  (await readTopic({ bootstrap: brokers, topic, until: 'last-stable-offset' })).map((record) => (JSON.parse(String(record.value)) as { seq: number }).seq);

interface Run {
  livedMs: number;
  checkpoints: number;
  firstCheckpointMs: number | undefined;
  ordered: number;
  unordered: number;
}

/** One `weir run`: SIGKILLed after `lifeMs` (or ended by itself); what its log says of its checkpoints. */
async function oneRun(lifeMs: number): Promise<Run> {
  const startedAt = Date.now();
  const child: ChildProcess = spawn(
    process.execPath,
    [join(root, 'bin', 'weir.js'), 'run', job, '--config', config, '--parallelism', '2', '--no-ui', '--log-level', 'debug'],
    {
      env: {
        ...process.env,
        KAFKA_BROKERS: bootstrap,
        AE_INPUT: topics.input,
        AE_ORDERED_OUTPUT: topics.ordered,
        AE_UNORDERED_OUTPUT: topics.unordered,
        AE_SERVICE: serviceUrl,
        AE_REBALANCE: '1',
        AE_UNBOUNDED: '1',
        AE_TIMEOUT: '20s',
        AE_CAPACITY: '20',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const completions: number[] = [];
  const lines: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (/DEBUG: checkpoint \d+ completed/.test(line)) completions.push(Date.now() - startedAt);
      // CRASH_LOOP_LOGS=<folder>: each run's log, every line prefixed with the ms since its process was spawned.
      if (logDir !== undefined && line !== '') lines.push(`+${Date.now() - startedAt} ${line}`);
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await Promise.race([exited, sleep(lifeMs)]);
  child.kill('SIGKILL');
  await exited;
  if (logDir !== undefined) await writeFile(join(logDir, `run-${runs.length + 1}.log`), `${lines.join('\n')}\n`);
  return {
    livedMs: Date.now() - startedAt,
    checkpoints: completions.length,
    firstCheckpointMs: completions[0],
    ordered: new Set(await seqs(topics.ordered)).size,
    unordered: new Set(await seqs(topics.unordered)).size,
  };
}

const runs: Run[] = [];
const began = Date.now();
while (runs.length < MAX_RUNS) {
  const run = await oneRun(5000 + Math.random() * 5000);
  runs.push(run);
  log(
    `run ${runs.length}: lived ${(run.livedMs / 1000).toFixed(1)} s, ${run.checkpoints} checkpoints (first at ${run.firstCheckpointMs ?? '-'} ms), output ${run.ordered} / ${run.unordered} of ${records}`,
  );
  if (run.ordered >= records && run.unordered >= records) break;
}
const totalMs = Date.now() - began;

// The audit: every input record exactly once in each output.
const audits: string[] = [];
for (const topic of [topics.ordered, topics.unordered]) {
  const all = await seqs(topic);
  const distinct = new Set(all);
  const missing = records - [...distinct].filter((seq) => seq >= 0 && seq < records).length;
  audits.push(`${topic}: ${all.length} records, ${all.length - distinct.size} duplicates, ${missing} missing`);
}
service.closeAllConnections();
service.close();
await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => {});
await admin.close();
await rm(folder, { recursive: true, force: true });
await broker.release();

const caughtUp = runs.at(-1) !== undefined && (runs.at(-1) as Run).ordered >= records && (runs.at(-1) as Run).unordered >= records;
const everyRunCheckpointed = runs.every((run) => run.checkpoints > 0);
const firsts = runs.map((run) => run.firstCheckpointMs).filter((ms): ms is number => ms !== undefined);
const lines = [
  '# Crash loop: SIGKILL every 5-10 s under back pressure',
  '',
  `\`npm run bench:crash-loop -- ${records}${unaligned ? ' --unaligned' : ''}\`, ${new Date().toISOString().slice(0, 10)}, one broker, this machine. The async-enrich job (orderedWait behind a forward edge, unorderedWait behind a rebalance, a 20-30 ms service, capacity 20, parallelism 2), ${unaligned ? 'unaligned' : 'aligned'} checkpoints every 1 s, SIGKILLed every 5-10 s.`,
  '',
  `${runs.length} runs in ${(totalMs / 1000).toFixed(0)} s; caught up: ${caughtUp ? 'yes' : 'no'}; every run completed a checkpoint: ${everyRunCheckpointed ? 'yes' : 'no'}; first checkpoint after the start: ${firsts.length > 0 ? `${Math.min(...firsts)}-${Math.max(...firsts)} ms` : '-'}.`,
  '',
  ...markdownTable(
    ['run', 'lived s', 'checkpoints', 'first checkpoint ms', 'ordered output', 'unordered output'],
    runs.map((run, index) => [
      String(index + 1),
      (run.livedMs / 1000).toFixed(1),
      String(run.checkpoints),
      String(run.firstCheckpointMs ?? '-'),
      run.ordered.toLocaleString('en-US'),
      run.unordered.toLocaleString('en-US'),
    ]),
  ),
  '',
  `Audit (read_committed): ${audits.join('; ')}.`,
  '',
];
await writeFile(join(root, 'bench', 'results', unaligned ? 'crash-loop-unaligned.md' : 'crash-loop.md'), lines.join('\n'));
process.stdout.write(lines.join('\n'));
process.exit(caughtUp && everyRunCheckpointed && audits.every((audit) => audit.includes(' 0 duplicates, 0 missing')) ? 0 : 1);
