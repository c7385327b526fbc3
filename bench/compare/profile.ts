/**
 * CPU profile of the side-by-side benchmark's Weir run beside the raw client pipe's: both read the
 * same pre-filled input to its end (bounded), under `node --cpu-prof` (which profiles every worker
 * thread too), and the profiles are summed up by self time: the top functions, and the time by
 * component (the Kafka client, Weir's runtime, its connectors, V8's GC, ...).
 *
 *   npm run bench:compare -- --profile [--records 1000000] [--parallelism 2] [--interval 1000] [--brokers host:port] [--out bench/results]
 *
 * Writes <out>/profile.md; the .cpuprofile files stay in a temp folder (printed) for Chrome DevTools.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { formatBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { benchBroker } from './bench-broker.ts';
import { auditOutput, fillInput, PARTITIONS, waitForTopics } from './kafka-io.ts';
import { markdownTable } from './report.ts';
import { type StartSettings, type SystemName, startSystem } from './systems.ts';

const { values: options } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    parallelism: { type: 'string', default: '2' },
    interval: { type: 'string', default: '1000' },
    brokers: { type: 'string' },
    out: { type: 'string', default: join(import.meta.dirname, '..', 'results') },
    top: { type: 'string', default: '25' },
  },
});
const records = Number(options.records);
const parallelism = Number(options.parallelism);
const intervalMs = Number(options.interval);
const repoDir = join(import.meta.dirname, '..', '..');
const folder = await mkdtemp(join(tmpdir(), 'weir-compare-profile-'));
const log = (line: string) => process.stderr.write(`${line}\n`);

const { brokers, release } = await benchBroker(options.brokers, folder, log);
const bootstrap = formatBootstrap(brokers);
const admin = new Admin({ clientId: 'weir-compare-profile', bootstrapBrokers: [bootstrap] });

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

interface Summary {
  system: SystemName;
  seconds: number;
  threads: { file: string; busyMs: number }[];
  busyMs: number;
  functions: Map<string, number>;
  components: Map<string, number>;
  stages: Map<string, number>;
}

type Frame = Profile['nodes'][number]['callFrame'];

/**
 * Stages of the hot path, most specific first: a sample goes to the first stage that any frame of
 * its stack matches (so the socket write inside a produce request is "socket writes", and the
 * keyed function called from a channel's message handler is "keyed process function").
 */
const STAGES: [string, (frame: Frame, leaf: boolean) => boolean][] = [
  ['V8 garbage collector', (f) => f.functionName === '(garbage collector)'],
  ['socket writes (write syscalls to the broker)', (f, leaf) => leaf && f.url === '' && (f.functionName === 'writeBuffer' || f.functionName === 'writev')],
  ['Kafka client: encode produce requests (record batches)', (f) => f.url.includes('/apis/producer/produce-v11')],
  ['Kafka client: decode fetch responses (record batches)', (f) => f.url.includes('/apis/consumer/fetch-v17')],
  ['source: JSON.parse of values (the deserializer)', (f) => f.functionName === 'json' && f.url.endsWith('kafka-deserializers.ts')],
  ['sink: serialize (JSON.stringify, key/value Buffers, murmur2)', (f) => f.functionName === 'serialize' && f.url.endsWith('kafka-record-serializer.ts')],
  ['raw pipe loop (JSON, count Map, Buffers, murmur2)', (f) => f.url.endsWith('raw-pipe.ts')],
  ['source: fetched records to splits and batches', (f) => /kafka-source(-reader)?\.ts$|partition-fetcher\.ts$|aborted-transaction-filter\.ts$/.test(f.url)],
  [
    'sink: transaction driver and two-phase commit',
    (f) =>
      /(transaction-driver|kafka-sink|kafka-writer|plain-producer|partition-leaders|produce-pipeline|produce-request|record-accumulator|record-batch-builder|retry-kafka-request|two-phase-commit-sink)\.ts$/.test(
        f.url,
      ),
  ],
  ['keyed process function and state', (f) => /keyed-process-operator\.ts$|\/src\/state\//.test(f.url) || f.url.endsWith('compare-weir-job.ts')],
  [
    'exchange between threads (channels, postMessage)',
    (f) => f.functionName === 'postMessage' || /runtime\/(io\/channel-writer|taskexecutor\/task-executor)\.ts$/.test(f.url),
  ],
  ['start-up: module loading, client schema compilation', (f) => /internal\/modules\/|internal\/bootstrap\/|\/ajv\/|amaro/.test(f.url)],
  ['Weir runtime (tasks, checkpoints, barriers)', (f) => f.url.includes('/src/')],
  ['Kafka client: connections, socket reads, other', (f) => f.url.includes('@platformatic') || f.url.includes('/fastq/')],
];

function stageOf(id: number, byId: Map<number, Profile['nodes'][number]>, parent: Map<number, number>): string {
  const stack: Frame[] = [];
  for (let current: number | undefined = id; current !== undefined; current = parent.get(current))
    stack.push((byId.get(current) as Profile['nodes'][number]).callFrame);
  for (const [name, test] of STAGES) if (stack.some((frame, index) => test(frame, index === 0))) return name;
  return 'other (event loop, promises, Node.js internals)';
}

function componentOf(url: string, name: string): string {
  if (name === '(garbage collector)') return 'V8 garbage collector';
  if (name === '(program)') return 'V8/native, unattributed (program)';
  if (url === '') return `native: ${name}`;
  const kafka = /node_modules\/@platformatic\/kafka\/dist\/(.+)$/.exec(url);
  if (kafka !== null) {
    const path = kafka[1] as string;
    if (path.startsWith('protocol/')) return `kafka client: protocol (${path.replace(/^protocol\//, '').replace(/\.js$/, '')})`;
    if (path.startsWith('apis/')) return 'kafka client: API encode/decode (apis/)';
    if (path.startsWith('network/')) return 'kafka client: network (connection)';
    return `kafka client: ${path.replace(/\.js$/, '')}`;
  }
  if (url.includes('/node_modules/')) return `dependency: ${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1]}`;
  if (url.startsWith('node:')) return `Node.js: ${url.slice(5)}`;
  const local = url.startsWith('file://') ? relative(repoDir, new URL(url).pathname) : url;
  if (local.startsWith('src/connectors/kafka/')) return `Weir Kafka connector: ${local.slice('src/connectors/kafka/'.length)}`;
  if (local.startsWith('src/')) return `Weir: ${local.slice(4)}`;
  if (local.startsWith('bench/')) return `job/bench code: ${local.slice(6)}`;
  return local;
}

function summarize(system: SystemName, dir: string, seconds: number): Summary {
  const summary: Summary = { system, seconds, threads: [], busyMs: 0, functions: new Map(), components: new Map(), stages: new Map() };
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const self = new Map<number, number>();
    for (let i = 0; i < profile.samples.length; i++) {
      const id = profile.samples[i] as number;
      self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
    }
    let busy = 0;
    for (const [id, ms] of self) {
      const frame = (byId.get(id) as Profile['nodes'][number]).callFrame;
      if (frame.functionName === '(idle)' || frame.functionName === '(root)') continue;
      busy += ms;
      const where = frame.url === '' ? '' : ` ${componentOf(frame.url, frame.functionName).replace(/^[^:]+: /, '')}:${frame.lineNumber + 1}`;
      const key = `${frame.functionName || '(anonymous)'}${where}`;
      summary.functions.set(key, (summary.functions.get(key) ?? 0) + ms);
      const stage = stageOf(id, byId, parent);
      summary.stages.set(stage, (summary.stages.get(stage) ?? 0) + ms);
      const component = componentOf(frame.url, frame.functionName);
      summary.components.set(component, (summary.components.get(component) ?? 0) + ms);
    }
    summary.threads.push({ file, busyMs: busy });
    summary.busyMs += busy;
  }
  return summary;
}

async function profileRun(system: SystemName): Promise<Summary> {
  const input = `weir-compare-profile-${system}-${Date.now().toString(36)}-in`;
  const output = input.replace(/-in$/, '-out');
  await admin.createTopics({ topics: [input, output], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(brokers, [input, output]);
  await fillInput(brokers, input, 0, records);
  const profileDir = join(folder, `${system}-profiles`);
  await mkdir(profileDir, { recursive: true });
  const settings: StartSettings = {
    bootstrap,
    input,
    output,
    parallelism,
    intervalMs,
    folder: join(folder, system),
    runName: input,
    jvmOptions: [],
    nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=500'],
    bounded: true,
  };
  log(`profiling ${system} over ${records.toLocaleString('en')} records...`);
  const started = performance.now();
  const child = startSystem(system, settings, join(folder, `${system}.log`));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${system} exited with code ${code}; see ${join(folder, `${system}.log`)}`);
  const audit = await auditOutput(brokers, output, records);
  if (!audit.ok) throw new Error(`${system}'s output failed the audit: ${JSON.stringify(audit)}`);
  await admin.deleteTopics({ topics: [input, output] }).catch(() => {});
  return summarize(system, profileDir, seconds);
}

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)}%`;

function render(summary: Summary, top: number): string {
  const lines: string[] = [];
  lines.push(
    `### ${summary.system === 'weir' ? 'Weir' : 'raw client pipe'}: ${summary.seconds.toFixed(1)} s wall, ${(summary.busyMs / 1000).toFixed(1)} s busy on ${summary.threads.length} threads (${((records / summary.busyMs) * 1000).toLocaleString('en', { maximumFractionDigits: 0 })} records per busy second)`,
  );
  lines.push('');
  lines.push(
    `Busy time per thread: ${summary.threads.map((thread) => `${(thread.busyMs / 1000).toFixed(1)} s`).join(', ')} (main thread first); the 2 cores could give ${(2 * summary.seconds).toFixed(1)} s in this wall time.`,
  );
  lines.push('');
  const startUp = [...summary.stages].find(([name]) => name.startsWith('start-up'))?.[1] ?? 0;
  const seconds = (ms: number) => (ms / 1000).toFixed(2);
  lines.push(
    ...markdownTable(
      ['stage of the hot path', 'busy s', 'share', 'share after start-up'],
      [...summary.stages]
        .sort((a, b) => b[1] - a[1])
        .map(([name, ms]) => [name, seconds(ms), percent(ms, summary.busyMs), name.startsWith('start-up') ? '' : percent(ms, summary.busyMs - startUp)]),
    ),
  );
  lines.push('');
  lines.push(
    ...markdownTable(
      ['component (self time)', 'busy s', 'share'],
      [...summary.components]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 20)
        .map(([name, ms]) => [name, seconds(ms), percent(ms, summary.busyMs)]),
    ),
  );
  lines.push('');
  lines.push(
    ...markdownTable(
      ['function (self time)', 'busy s', 'share'],
      [...summary.functions]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([name, ms]) => [`\`${name.replace(/\|/g, '\\|')}\``, seconds(ms), percent(ms, summary.busyMs)]),
    ),
  );
  lines.push('');
  return lines.join('\n');
}

try {
  const weir = await profileRun('weir');
  const raw = await profileRun('raw');
  const top = Number(options.top);
  const text = [
    '# CPU profile: Weir beside the raw client pipe',
    '',
    `Generated ${new Date().toISOString()} by \`${['npm run bench:compare -- --profile', ...process.argv.slice(2)].join(' ')}\`: the benchmark's job over ${records.toLocaleString('en')} pre-filled records (${PARTITIONS} partitions, read to the end), parallelism ${parallelism}, checkpoints every ${intervalMs} ms, \`node --cpu-prof\` on every thread. Self time from wall-clock samples of each thread while it is not idle (on 2 shared cores this includes time a busy thread waits for a core); shares are of the run's busy time. Weir's output passed the audit.`,
    '',
    render(weir, top),
    render(raw, top),
  ].join('\n');
  await mkdir(options.out, { recursive: true });
  await writeFile(join(options.out, 'profile.md'), `${text.trimEnd()}\n`);
  console.log(text);
  log(`profiles kept in ${folder}`);
} finally {
  await admin.close();
  await release();
}
