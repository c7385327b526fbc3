/**
 * Cluster mode's benchmark (issue 35, point 7), Weir alone, side by side in one run on one broker:
 *
 * 1. Cost per record at saturation, on the job of bench:compare unchanged (bench/cluster-cost.ts):
 *    one process, one member (`--cluster-threads` default: the cores), two members of one thread
 *    each on the same host (8 tasks), and the same two with `--keyed-tasks 128` (132 tasks), over one
 *    pre-filled input; records/s and CPU seconds per million records.
 * 2. Transactions per second on the broker against tasks and interval, under steady load and idle
 *    (bench/cluster-transactions.ts: the committed records of the checkpoint topic, one per task commit).
 * 3. Failover: two members of the cluster test job (test/fixtures/jobs/cluster-job.ts: a 12-partition
 *    input, keyBy into keyed running totals, keyBy into 1 s event-time windows, two exactly-once Kafka
 *    outputs) under steady input; one is SIGKILLed. The time from the kill until every account's
 *    totals flow again, against the session timeout; and the same when the killed member comes back
 *    at once under its instance id (static membership).
 * 4. Restore: a member's tasks of the cluster test job opened by another member after the first
 *    left, for growing state (accounts): the state bytes per task and how long opening it took.
 * 5. A savepoint's duration against state size (`weir savepoint --cluster`: bench/cluster-savepoint.ts).
 *
 *   npm run bench:cluster [-- <records>]     (records of case 1, default 500000)
 *   npm run bench:cluster -- cost [records]       (case 1 alone; prints, writes nothing)
 *   npm run bench:cluster -- failover [rounds]   (case 3 alone, `rounds` times each, default 3; prints,
 *                                                  writes nothing; BENCH_CLUSTER_LOGS=<folder> keeps the members' logs)
 * Uses KAFKA_BROKERS, or starts a local broker for the run. Writes bench/results/cluster.md with the
 * machine's load average (the figures of a loaded machine are not those of an idle one).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../src/connectors/kafka/topic-reader.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { type CostFigure, clusterCost } from './cluster-cost.ts';
import { type SavepointFigure, savepointAt, savepointTable } from './cluster-savepoint.ts';
import { STEADY_RATE, type TransactionFigure, type TransactionPoint, transactionsAt } from './cluster-transactions.ts';
import { waitForTopics } from './compare/kafka-io.ts';
import { markdownTable } from './compare/report.ts';

const failoverOnly = process.argv[2] === 'failover';
const records = failoverOnly || process.argv[2] === 'cost' ? 0 : Number(process.argv[2] ?? 500_000);
const SESSION_MS = 6000;
const root = join(import.meta.dirname, '..');
const job = join(root, 'test', 'fixtures', 'jobs', 'cluster-job.ts');
const broker = await ensureBroker({ log: (line) => process.stderr.write(`${line}\n`) });
const brokers = broker.brokers;
const bootstrap = formatBootstrap(brokers);
const admin = new Admin({ clientId: 'weir-bench-cluster', bootstrapBrokers: [bootstrap] });
const run = randomBytes(3).toString('hex');
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Topics {
  input: string;
  totals: string;
  windows: string;
}

async function topics(label: string): Promise<Topics> {
  const names = { input: `weir-bench-${run}-${label}-in`, totals: `weir-bench-${run}-${label}-totals`, windows: `weir-bench-${run}-${label}-windows` };
  await admin.createTopics({ topics: [names.input], partitions: 12, replicas: 1 });
  await admin.createTopics({ topics: [names.totals, names.windows], partitions: 3, replicas: 1 });
  // Written and read at once: each must have its leaders first (the restore case once failed on an unknown topic).
  await waitForTopics(brokers, [names.input], 12);
  await waitForTopics(brokers, [names.totals, names.windows], 3);
  return names;
}

/** Payments seq from..to-1 over `accounts` accounts, each account in partition (account % 12). */
async function fill(topic: string, from: number, to: number, accounts: number): Promise<void> {
  const connections = new ClusterConnections(brokers);
  const producer = new PlainProducer(connections);
  for (let first = from; first < to; first += 5000) {
    const batch = [];
    for (let seq = first; seq < Math.min(to, first + 5000); seq++) {
      const a = seq % accounts;
      const value = JSON.stringify({ seq, account: `a${a}`, amount: (seq % 7) + 1, ts: 1_700_000_000_000 + seq });
      batch.push({ topic, partition: a % 12, key: Buffer.from(`a${a}`), value: Buffer.from(value) });
    }
    await producer.send(batch, -1);
  }
  await connections.close();
}

interface Proc {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<unknown>;
}

function weirRun(t: Topics, args: string[], storage: string): Proc {
  const child = spawn(
    process.execPath,
    [join(root, 'bin', 'weir.js'), 'run', job, '--checkpoint-interval', '1s', '--checkpoint-storage', storage, '--no-ui', ...args],
    { env: { ...process.env, KAFKA_BROKERS: bootstrap, CJ_INPUT: t.input, CJ_TOTALS: t.totals, CJ_WINDOWS: t.windows }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { child, stderr: () => stderr, exited: new Promise((resolve) => child.once('exit', resolve)) };
}

async function stop(proc: Proc): Promise<void> {
  proc.child.kill('SIGTERM');
  await Promise.race([proc.exited, sleep(20_000)]);
  proc.child.kill('SIGKILL');
}

const committed = async (topic: string) => (await readTopic({ bootstrap: brokers, topic, until: 'last-stable-offset' })).length;

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A probe that throws (a topic just created, not in the metadata yet) is "not yet".
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

let failovers = 0;
/** 2. Kill -> every account's totals flowing again, two members under steady input. */
async function failover(staticMembers: boolean): Promise<number> {
  const label = `failover-${staticMembers ? 's' : 'd'}${++failovers}`;
  const t = await topics(label);
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-'));
  const cluster = `weir-bench-${run}-${label}`;
  const member = (id: string) =>
    weirRun(t, ['--cluster', cluster, '--session-timeout', `${SESSION_MS}ms`, ...(staticMembers ? ['--instance-id', id] : [])], storage);
  const procs = [member('m1'), member('m2')];
  let produced = 0;
  let producing = true;
  const steady = (async () => {
    while (producing) {
      await fill(t.input, produced, produced + 100, 40);
      produced += 100;
      await sleep(50);
    }
  })();
  await waitFor('both members running', async () => (await committed(t.totals)) > 2000);
  await sleep(3000);
  const killedAt = performance.now();
  const seqAtKill = produced;
  procs[1]?.child.kill('SIGKILL');
  if (staticMembers) procs.push(member('m2'));
  // Flowing again: every one of the 40 accounts has a total of a payment produced after the kill.
  await waitFor('every account flowing again', async () => {
    const totals = await readTopic({ bootstrap: brokers, topic: t.totals, until: 'last-stable-offset' });
    const fresh = new Set<string>();
    for (const record of totals) {
      const total = JSON.parse(String(record.value)) as { seq: number; account: string };
      if (total.seq >= seqAtKill) fresh.add(total.account);
    }
    return fresh.size === 40;
  });
  const seconds = (performance.now() - killedAt) / 1000;
  producing = false;
  await steady;
  for (const proc of procs) await stop(proc);
  const logs = process.env.BENCH_CLUSTER_LOGS;
  if (logs !== undefined) {
    const wallKill = Date.now() - (performance.now() - killedAt);
    const header = `killed at ${new Date(wallKill).toISOString()}, flowing again after ${seconds.toFixed(1)} s\n`;
    for (const [index, proc] of procs.entries()) await writeFile(join(logs, `${cluster}-${index}.log`), header + proc.stderr());
  }
  await rm(storage, { recursive: true, force: true });
  return seconds;
}

/** 3. A member fills its tasks' state with `accounts` keys and leaves; another opens them. */
async function restore(accounts: number): Promise<{ bytes: number; ms: number; maxMs: number }> {
  const t = await topics(`restore-${accounts}`);
  await fill(t.input, 0, accounts, accounts);
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-'));
  const cluster = `weir-bench-${run}-restore-${accounts}`;
  const first = weirRun(t, ['--cluster', cluster], storage);
  await waitFor(`${accounts} totals`, async () => (await committed(t.totals)) >= accounts);
  await sleep(2500); // checkpoints after the last record
  await stop(first);
  const second = weirRun(t, ['--cluster', cluster], storage);
  const pattern = /totals task \d+ started from checkpoint \d+ \(state (\d+) bytes, opened in (\d+) ms\)/g;
  await waitFor('every totals task restored', async () => [...second.stderr().matchAll(pattern)].length >= 12);
  await stop(second);
  await rm(storage, { recursive: true, force: true });
  const opened = [...second.stderr().matchAll(pattern)].map((match) => ({ bytes: Number(match[1]), ms: Number(match[2]) }));
  return {
    bytes: opened.reduce((sum, entry) => sum + entry.bytes, 0) / opened.length,
    ms: opened.reduce((sum, entry) => sum + entry.ms, 0) / opened.length,
    maxMs: Math.max(...opened.map((entry) => entry.ms)),
  };
}

const fmt = (value: number, digits = 0) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
const TRANSACTION_POINTS: TransactionPoint[] = [
  { maxParallelism: 128, intervalMs: 1000 },
  { maxParallelism: 128, intervalMs: 200 },
  { maxParallelism: 16, intervalMs: 1000 },
  { maxParallelism: 16, intervalMs: 200 },
];
if (process.argv[2] === 'cost') {
  // Case 1 alone: prints, writes nothing.
  try {
    const costs = await clusterCost({ brokers, admin, name: `weir-bench-${run}`, log }, Number(process.argv[3] ?? 500_000));
    const single = costs[0] as CostFigure;
    for (const figure of costs) {
      log(
        `${figure.run}: ${fmt(figure.rate)} records/s (${fmt(figure.rate / single.rate, 2)}x one process), CPU ${fmt(figure.cpuPerMillion, 1)} s per million (${fmt(figure.cpuPerMillion / single.cpuPerMillion, 2)}x), ${figure.audit} (load ${load()})`,
      );
    }
  } finally {
    await admin.close();
    await broker.release();
  }
  process.exit(0);
}
if (failoverOnly) {
  try {
    for (let round = 1; round <= Number(process.argv[3] ?? 3); round++) {
      const dynamic = await failover(false);
      const staticBack = await failover(true);
      log(
        `failover round ${round}: ${fmt(dynamic, 1)} s; static member back at once ${fmt(staticBack, 1)} s (goal <= ${SESSION_MS / 1000 + 2} s; load ${load()})`,
      );
    }
  } finally {
    await admin.close();
    await broker.release();
  }
  process.exit(0);
}
const started = performance.now();
const loads: [string, string][] = [['start', load()]];
try {
  log(`cost per record: the job of bench:compare, ${records} records; one process, one member, two members`);
  const costs = await clusterCost({ brokers, admin, name: `weir-bench-${run}`, log }, records);
  loads.push(['after the cost runs', load()]);
  const transactions: TransactionFigure[] = [];
  for (const point of TRANSACTION_POINTS) {
    log(`transactions: maxParallelism ${point.maxParallelism}, interval ${point.intervalMs} ms`);
    const figure = await transactionsAt({ brokers, admin, name: `weir-bench-${run}`, log }, point);
    log(`  ${figure.tasks} tasks: ${fmt(figure.steadyPerSecond, 1)} transactions/s steady, ${figure.idle} idle`);
    transactions.push(figure);
  }
  loads.push(['after the transaction runs', load()]);
  log('failover: two members, one killed');
  const dynamic = await failover(false);
  const staticBack = await failover(true);
  const restores: [number, Awaited<ReturnType<typeof restore>>][] = [];
  for (const accounts of [1_000, 100_000]) {
    log(`restore: ${accounts} accounts`);
    restores.push([accounts, await restore(accounts)]);
  }
  const savepoints: SavepointFigure[] = [];
  for (const accounts of [10_000, 100_000]) {
    log(`savepoint: ${accounts} keys`);
    savepoints.push(await savepointAt(brokers, accounts));
  }
  loads.push(['end', load()]);
  const single = costs[0] as CostFigure;
  const ratio = (figure: CostFigure) => `${fmt(figure.rate / single.rate, 2)} · ${fmt(figure.cpuPerMillion / single.cpuPerMillion, 2)}`;
  const costLabels: Record<CostFigure['run'], string> = {
    'one process': '`weir run --parallelism 2` (one process)',
    'one member': '`weir run --cluster` (one member, threads = cores)',
    'two members': 'two members, `--cluster-threads 1` each',
    'one member, a task per key group': 'one member, `--keyed-tasks 128` (132 tasks, not 8)',
    'two members, a task per key group': 'two members, `--cluster-threads 1 --keyed-tasks 128` each',
  };
  const lines = [
    '# Cluster mode: cost, transactions, failover, restore, savepoints',
    '',
    `\`npm run bench:cluster -- ${records}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} cores, one broker on the same cores, ` +
      `${fmt((performance.now() - started) / 60_000, 1)} minutes. Load average (1, 5, 15 min) ${loads.map(([when, value]) => `${when}: ${value}`).join('; ')}.`,
    '',
    `## Cost per record at saturation (the job of bench:compare, ${fmt(records)} pre-filled records, checkpoints every 1 s)`,
    '',
    ...markdownTable(
      [
        'run',
        'records/s (whole run)',
        'records/s (10-90% written)',
        'first output (s)',
        'CPU s per million records',
        'ratio to one process (records/s · CPU)',
        'audit',
      ],
      costs.map((figure) => [
        costLabels[figure.run],
        fmt(figure.rate),
        figure.steadyRate === undefined ? '-' : fmt(figure.steadyRate),
        figure.firstOutputSeconds === undefined ? '-' : fmt(figure.firstOutputSeconds, 1),
        fmt(figure.cpuPerMillion, 1),
        ratio(figure),
        figure.audit,
      ]),
    ),
    '',
    `## Transactions per second on the broker (one member, the job of bench:compare, ${fmt(STEADY_RATE)} records/s steady, then idle)`,
    '',
    ...markdownTable(
      ['maxParallelism', 'tasks', 'interval', 'transactions/s (steady)', 'tasks / interval', 'transactions in 5 s idle'],
      transactions.map((entry) => [
        String(entry.maxParallelism),
        String(entry.tasks),
        `${entry.intervalMs} ms`,
        fmt(entry.steadyPerSecond, 1),
        fmt((entry.tasks * 1000) / entry.intervalMs, 1),
        String(entry.idle),
      ]),
    ),
    '',
    '## Failover (the cluster test job, kill -> every account flowing again)',
    '',
    ...markdownTable(
      ['case', 'seconds', 'ratio to the session timeout (6 s)', 'goal: <= session timeout + 2 s'],
      [
        [
          'a member SIGKILLed, the other takes its tasks',
          fmt(dynamic, 1),
          fmt(dynamic / (SESSION_MS / 1000), 2),
          dynamic <= SESSION_MS / 1000 + 2 ? 'met' : 'not met',
        ],
        [
          'a static member SIGKILLed and started again at once',
          fmt(staticBack, 1),
          fmt(staticBack / (SESSION_MS / 1000), 2),
          staticBack <= SESSION_MS / 1000 + 2 ? 'met' : 'not met',
        ],
      ],
    ),
    '',
    '## Restore (the cluster test job, a totals task opened by a new owner)',
    '',
    ...markdownTable(
      ['accounts', 'state per task (bytes)', 'open, mean (ms)', 'open, slowest (ms)'],
      restores.map(([accounts, entry]) => [fmt(accounts), fmt(entry.bytes), fmt(entry.ms), fmt(entry.maxMs)]),
    ),
    '',
    ...savepointTable(savepoints),
  ];
  await writeFile(join(import.meta.dirname, 'results', 'cluster.md'), lines.join('\n'));
  console.log(lines.join('\n'));
} finally {
  await admin.close();
  await broker.release();
}
