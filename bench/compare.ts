/**
 * Side-by-side benchmark: the same exactly-once job (read, parse, keyBy, running count per key,
 * write) on Weir, Apache Flink 2.0, Kafka Streams 4.1 and the raw client pipe, on one local broker,
 * at parallelism 1 and 2 with checkpoint (commit) intervals of 1 s and 100 ms. Writes
 * bench/results/compare.{md,svg,json}; docs/benchmarks.md explains the method.
 *
 *   npm run bench:compare [-- --records 5000000 --systems weir,flink --kill one ...]   (--help lists the options)
 *   npm run bench:compare -- --profile    CPU profiles of Weir and the raw pipe (bench/compare/profile.ts)
 *
 * Each run, in one process of the system under test (restarted once if it is killed):
 *  1. backlog: `records` input records across 4 partitions are written first; the system starts and
 *     reads them all. Throughput over the whole run = records / (start to the last output visible);
 *     steady state = the output's write rate between 10% and 90% of the records; time to first output.
 *  2. live: records at `rate`/s for `latency-seconds`, each carrying its produce time; a
 *     read_committed reader of the output takes visible time - produce time (p50, p99).
 *  3. kill (every run but the raw pipe's by default, see --kill): records keep flowing at `rate`/s, the process is SIGKILLed and
 *     started again at once; recovery = restart to the first output of a record produced after the kill.
 *  4. audit: the whole output read read_committed (Weir's readTopic): every input record exactly
 *     once with its key's exact running count, or the run is void.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { type BrokerAddress, formatBootstrap, parseBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { startLocalBroker, stopLocalBroker } from '../src/local-kafka/local-broker.ts';
import { freePort, isPortFree } from '../src/local-kafka/ports.ts';
import { cpuOf } from './compare/cpu-of.ts';
import { type Audit, auditOutput, fillInput, OutputWatcher, PARTITIONS, SteadyProducer, topicSize, WrittenSampler, waitForTopics } from './compare/kafka-io.ts';
import { primeCompileCache } from './compare/prime-compile-cache.ts';
import { type CaseResult, renderChart, renderMarkdown } from './compare/report.ts';
import { buildPeer, PeakRss, type StartSettings, SYSTEM_LABELS, type SystemName, startSystem, stopProcess } from './compare/systems.ts';

const USAGE = `npm run bench:compare [-- options]
  --records <n>            backlog records per run (default 1000000; the issue's example is 5000000)
  --systems <list>         weir,flink,kafka-streams,raw (default all)
  --parallelism <list>     default 1,2
  --intervals <list>       checkpoint/commit intervals in ms, default 1000,100
  --rate <n>               records/s of the live and kill phases (default 10000)
  --latency-seconds <n>    length of the live phase (default 8)
  --kill <which>           runs with a SIGKILL: all (default), one (parallelism 2, the first interval), none
  --profile                instead of the matrix: CPU profiles of Weir and the raw pipe (bench/compare/profile.ts,
                           which takes --records, --parallelism, --interval, --brokers, --out)
  --brokers <host:port>    use this cluster instead of starting a broker
  --jvm-opts <options>     extra JVM options for the Java peers, e.g. "-Xmx1g" (default: none, JVM ergonomics)
  --out <folder>           default bench/results
  --keep                   keep the run folder (logs, checkpoints) under the temp folder`;

if (process.argv.includes('--profile')) {
  // The profile is its own script; run it with the other arguments.
  const { spawnSync } = await import('node:child_process');
  const args = process.argv.slice(2).filter((arg) => arg !== '--profile');
  const child = spawnSync(process.execPath, [join(import.meta.dirname, 'compare', 'profile.ts'), ...args], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

const { values: options } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    systems: { type: 'string', default: 'weir,flink,kafka-streams,raw' },
    parallelism: { type: 'string', default: '1,2' },
    intervals: { type: 'string', default: '1000,100' },
    rate: { type: 'string', default: '10000' },
    'latency-seconds': { type: 'string', default: '8' },
    kill: { type: 'string', default: 'all' },
    brokers: { type: 'string' },
    'jvm-opts': { type: 'string', default: '' },
    out: { type: 'string', default: join(import.meta.dirname, 'results') },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

const records = Number(options.records);
const systems = options.systems.split(',') as SystemName[];
for (const system of systems) if (!(system in SYSTEM_LABELS)) throw new Error(`unknown system "${system}" (${USAGE})`);
const parallelisms = options.parallelism.split(',').map(Number);
const intervals = options.intervals.split(',').map(Number);
const rate = Number(options.rate);
const latencySeconds = Number(options['latency-seconds']);
const killMode = options.kill;
if (!['all', 'one', 'none'].includes(killMode)) throw new Error(`--kill takes all, one or none (${USAGE})`);
const jvmOptions = options['jvm-opts'].split(' ').filter((option) => option !== '');

const started = Date.now();
const log = (line: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
const runName = `weir-compare-${Date.now().toString(36)}`;
const folder = join(tmpdir(), runName);
await mkdir(folder, { recursive: true });

// The broker and the peers' builds, side by side.
const brokerStart = (async (): Promise<{ brokers: BrokerAddress[]; release: () => Promise<void> }> => {
  if (options.brokers !== undefined) return { brokers: parseBootstrap(options.brokers, '--brokers'), release: async () => {} };
  const dataDir = join(folder, 'broker');
  const port = (await isPortFree(29092)) ? 29092 : await freePort();
  const state = await startLocalBroker({ dataDir, port, log });
  return { brokers: [{ host: state.host, port: state.port }], release: async () => void (await stopLocalBroker({ dataDir })) };
})();
const builds = Promise.all((['flink', 'kafka-streams'] as const).filter((peer) => systems.includes(peer)).map((peer) => buildPeer(peer, log)));
const [brokerResult, buildResult] = await Promise.allSettled([brokerStart, builds]);
if (buildResult.status === 'rejected' || brokerResult.status === 'rejected') {
  if (brokerResult.status === 'fulfilled') await brokerResult.value.release();
  throw buildResult.status === 'rejected' ? buildResult.reason : (brokerResult as PromiseRejectedResult).reason;
}
const broker = brokerResult.value;
const brokers = broker.brokers;
/** The system process running now: killed with the broker when the benchmark is interrupted. */
let running: ChildProcess | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the system under test and the broker`);
    running?.kill('SIGKILL');
    void broker.release().finally(() => process.exit(130));
  });
}
const bootstrap = formatBootstrap(brokers);
log(`broker at ${bootstrap}; ${records.toLocaleString('en')} records per run, ${PARTITIONS} partitions`);

const admin = new Admin({ clientId: 'weir-compare', bootstrapBrokers: [bootstrap] });

interface Case {
  system: SystemName;
  parallelism: number;
  intervalMs: number;
  kill: boolean;
}

const cases: Case[] = [];
for (const parallelism of parallelisms) {
  for (const [index, intervalMs] of intervals.entries()) {
    for (const system of systems) {
      if (system === 'raw' && index > 0) continue; // no interval: one run per parallelism
      const kill = system !== 'raw' && (killMode === 'all' || (killMode === 'one' && parallelism === Math.max(...parallelisms) && index === 0));
      cases.push({ system, parallelism, intervalMs, kill });
    }
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

async function runCase(entry: Case, index: number): Promise<CaseResult> {
  const label = `${SYSTEM_LABELS[entry.system]}, parallelism ${entry.parallelism}${entry.system === 'raw' ? '' : `, interval ${entry.intervalMs} ms`}`;
  log(`run ${index + 1}/${cases.length}: ${label}${entry.kill ? ', with a SIGKILL' : ''}`);
  const caseName = `${entry.system}-p${entry.parallelism}-i${entry.intervalMs}`;
  const caseFolder = join(folder, caseName);
  await mkdir(caseFolder, { recursive: true });
  const input = `${runName}-${caseName}-in`;
  const output = `${runName}-${caseName}-out`;
  await admin.createTopics({ topics: [input, output], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(brokers, [input, output]);
  const fillStarted = Date.now();
  await fillInput(brokers, input, 0, records);
  const filled = await topicSize(brokers, input);
  if (filled !== records) throw new Error(`the input has ${filled} records instead of ${records}`);
  log(`  input written in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s`);

  const result: CaseResult = { ...entry, label, records, status: 'ok' };
  const settings: StartSettings = {
    bootstrap,
    input,
    output,
    parallelism: entry.parallelism,
    intervalMs: entry.intervalMs,
    folder: caseFolder,
    runName: `${runName}-${caseName}`,
    jvmOptions,
    nodeOptions: [],
  };
  const logFile = join(caseFolder, 'system.log');
  const watcher = new OutputWatcher(brokers, output);
  const sampler = new WrittenSampler(brokers, output);
  let peakKb = 0;
  let cpuSeconds = 0;
  const spawnedAt = Date.now();
  let child = startSystem(entry.system, settings, logFile);
  running = child;
  let rss = new PeakRss(child.pid as number);
  let restartHook: (system: ChildProcess) => void = () => {};
  let flowing: SteadyProducer | undefined;
  const failed = new Promise<never>((_, fail) => {
    const watch = (system: ChildProcess) =>
      system.once('exit', (code, signal) => {
        if (system === child && signal !== 'SIGKILL' && signal !== 'SIGTERM')
          fail(new Error(`the system exited (code ${code}, signal ${signal}); see ${logFile}`));
      });
    watch(child);
    restartHook = watch;
  });
  failed.catch(() => {});
  const guard = <T>(promise: Promise<T>) => Promise.race([promise, failed]);
  try {
    // 1. backlog
    await guard(watcher.until(() => watcher.seen >= records, 600_000, 'the backlog in the output'));
    const backlogDoneAt = Date.now();
    result.firstOutputMs = (watcher.firstVisibleAt as number) - spawnedAt;
    result.throughput = (records * 1000) / (backlogDoneAt - spawnedAt);
    result.steadyThroughput = sampler.rateBetween(records * 0.1, records * 0.9);
    await sampler.stop();

    // 2. live
    watcher.parseFrom = records;
    watcher.latencyFrom = records;
    const live = new SteadyProducer(brokers, input, records, rate, latencySeconds);
    await guard(live.done);
    watcher.latencyTo = live.produced;
    await guard(watcher.until(() => watcher.seen >= live.produced, 120_000, 'the live records in the output'));
    const latencies = [...watcher.latencies].sort((a, b) => a - b);
    result.p50Ms = percentile(latencies, 50);
    result.p99Ms = percentile(latencies, 99);
    let total = live.produced;

    // 3. kill and restart
    if (entry.kill) {
      flowing = new SteadyProducer(brokers, input, total, rate);
      await sleep(2000 + Math.random() * entry.intervalMs);
      rss.stop();
      peakKb = Math.max(peakKb, rss.peakKb);
      cpuSeconds += cpuOf(child.pid as number);
      watcher.freshAfter = Date.now();
      await stopProcess(child, 'SIGKILL', 0);
      const restartedAt = Date.now();
      appendFileSync(logFile, `[bench ${new Date(restartedAt).toISOString()}] killed with SIGKILL; started again\n`);
      child = startSystem(entry.system, settings, logFile);
      running = child;
      restartHook(child);
      rss = new PeakRss(child.pid as number);
      await guard(watcher.until(() => watcher.freshVisibleAt !== undefined, 300_000, 'output after the restart'));
      result.recoveryMs = (watcher.freshVisibleAt as number) - restartedAt;
      await sleep(2000);
      await flowing.stop();
      total = flowing.produced;
      await guard(watcher.until(() => watcher.seen >= total, 180_000, 'every record in the output after the restart'));
    }
    rss.stop();
    peakKb = Math.max(peakKb, rss.peakKb);
    cpuSeconds += cpuOf(child.pid as number);
    result.peakRssMb = peakKb / 1024;
    result.cpuSeconds = cpuSeconds;
    result.total = total;
  } catch (error) {
    result.status = 'failed';
    result.error = error instanceof Error ? error.message : String(error);
    log(`  failed: ${result.error}`);
  } finally {
    await flowing?.stop();
    rss.stop();
    await stopProcess(child, 'SIGTERM', 15_000);
    running = undefined;
    await sampler.stop();
    await watcher.stop();
  }

  // 4. audit
  if (result.status === 'ok') {
    const size = await topicSize(brokers, input);
    if (size !== result.total) {
      result.status = 'failed';
      result.error = `the input has ${size} records instead of ${result.total}: the benchmark's producer failed`;
    }
  }
  if (result.status === 'ok') {
    try {
      const audit: Audit = await auditOutput(brokers, output, result.total as number);
      result.audit = audit;
      if (!audit.ok) result.status = 'void';
    } catch (error) {
      result.status = 'failed';
      result.error = `audit: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  log(
    `  ${result.status}: ${fmt(result.throughput)} records/s (steady ${fmt(result.steadyThroughput)}), p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ` +
      `peak RSS ${fmt(result.peakRssMb)} MB, first output ${fmt(result.firstOutputMs)} ms${result.recoveryMs === undefined ? '' : `, recovery ${fmt(result.recoveryMs)} ms`}` +
      `${result.audit === undefined ? '' : `; audit: ${result.audit.records} records, ${result.audit.duplicates} duplicates, ${result.audit.missing} missing, ${result.audit.wrongCounts} wrong counts`}`,
  );
  // Kafka Streams' changelog topic is named after its application id and store.
  for (const topic of [input, output, ...(entry.system === 'kafka-streams' ? [`${settings.runName}-streams-counts-changelog`] : [])]) {
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  }
  if (!options.keep) await rm(caseFolder, { recursive: true, force: true });
  return result;
}

function fmt(value: number | undefined): string {
  return value === undefined ? '-' : Math.round(value).toLocaleString('en');
}

const results: CaseResult[] = [];
try {
  // Each Node system once, untimed, so that no measured run is the first to strip and compile its modules.
  for (const system of ['weir', 'raw'] as const) {
    if (!systems.includes(system)) continue;
    await primeCompileCache(system, { admin, brokers, bootstrap, folder, runName, parallelism: Math.max(...parallelisms) }, log);
  }
  for (const [index, entry] of cases.entries()) results.push(await runCase(entry, index));
} finally {
  await admin.close();
  await broker.release();
  if (!options.keep) await rm(folder, { recursive: true, force: true });
  else log(`run folder kept: ${folder}`);
}

const seconds = (Date.now() - started) / 1000;
const command = `npm run bench:compare${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
const meta = { date: new Date().toISOString(), command, seconds, records, rate, latencySeconds, partitions: PARTITIONS, node: process.version, jvmOptions };
await mkdir(options.out, { recursive: true });
await writeFile(join(options.out, 'compare.json'), `${JSON.stringify({ meta, results }, null, 2)}\n`);
await writeFile(join(options.out, 'compare.md'), renderMarkdown(meta, results));
await writeFile(join(options.out, 'compare.svg'), renderChart(meta, results));
console.log(renderMarkdown(meta, results));
console.log(
  `wrote ${relative(process.cwd(), join(options.out, 'compare.md'))}, compare.svg and compare.json in ${seconds.toFixed(0)} s; regenerate with:\n  ${command}`,
);
