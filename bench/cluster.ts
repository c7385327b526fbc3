/**
 * Cluster mode's benchmark, Weir alone, side by side in one run on one broker:
 *
 * 1. Cost per record: the cluster test job (a 12-partition input, keyBy into keyed running totals,
 *    keyBy into 1 s event-time windows, two exactly-once Kafka outputs) over a pre-filled input, run
 *    by one process (`weir run`) and by one cluster member (`weir run --cluster`): records/s and
 *    CPU seconds per million records, until every total is readable read_committed.
 * 2. Failover: two members under steady input; one is SIGKILLed. The time from the kill until
 *    every account's totals flow again, against the session timeout; and the same when the killed
 *    member comes back at once under its instance id (static membership).
 * 3. Restore: a member's tasks opened by another member after the first left, for growing state
 *    (accounts): the state bytes per task and how long opening it took, from the members' logs.
 * 4. A savepoint's duration against state size (`weir savepoint --cluster`: bench/cluster-savepoint.ts).
 *
 *   npm run bench:cluster [-- <records>]
 * Uses KAFKA_BROKERS, or starts a local broker for the run. Writes bench/results/cluster.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../src/connectors/kafka/topic-reader.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { type SavepointFigure, savepointAt, savepointTable } from './cluster-savepoint.ts';
import { cpuOf } from './compare/cpu-of.ts';
import { markdownTable } from './compare/report.ts';

const records = Number(process.argv[2] ?? 100_000);
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

/** 1. The same job and input, one process against one cluster member. */
async function costPerRecord(mode: 'one process' | 'cluster member'): Promise<{ rate: number; cpuPerMillion: number }> {
  const t = await topics(mode === 'one process' ? 'single' : 'member');
  await fill(t.input, 0, records, 1000);
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-'));
  const started = performance.now();
  const proc = weirRun(t, mode === 'one process' ? ['--parallelism', '2'] : ['--cluster', `weir-bench-${run}-cost`], storage);
  await waitFor(`${mode}: every total`, async () => (await committed(t.totals)) >= records);
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuOf(proc.child.pid as number);
  await stop(proc);
  await rm(storage, { recursive: true, force: true });
  return { rate: records / seconds, cpuPerMillion: (cpu / records) * 1e6 };
}

/** 2. Kill -> every account's totals flowing again, two members under steady input. */
async function failover(staticMembers: boolean): Promise<number> {
  const t = await topics(staticMembers ? 'failover-static' : 'failover');
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-'));
  const cluster = `weir-bench-${run}-failover-${staticMembers ? 's' : 'd'}`;
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
try {
  log(`cost per record: ${records} records, one process, then one cluster member`);
  const single = await costPerRecord('one process');
  const member = await costPerRecord('cluster member');
  log('failover: two members, one killed');
  const dynamic = await failover(false);
  const staticBack = await failover(true);
  const restores: [number, Awaited<ReturnType<typeof restore>>][] = [];
  for (const accounts of [1_000, 20_000, 100_000]) {
    log(`restore: ${accounts} accounts`);
    restores.push([accounts, await restore(accounts)]);
  }
  const savepoints: SavepointFigure[] = [];
  for (const accounts of [10_000, 100_000]) {
    log(`savepoint: ${accounts} keys`);
    savepoints.push(await savepointAt(brokers, accounts));
  }
  const lines = [
    '# Cluster mode: cost, failover, restore, savepoints',
    '',
    `\`npm run bench:cluster -- ${records}\`, ${new Date().toISOString().slice(0, 10)}, one broker, this machine; the cluster test job (test/fixtures/jobs/cluster-job.ts), checkpoints every 1 s.`,
    '',
    '## Cost per record',
    '',
    ...markdownTable(
      ['run', 'records/s', 'CPU s per million records', 'ratio to one process (records/s · CPU)'],
      [
        ['one process (`weir run`, parallelism 2)', fmt(single.rate), fmt(single.cpuPerMillion, 1), '1.00 · 1.00'],
        [
          'one cluster member (`--cluster`)',
          fmt(member.rate),
          fmt(member.cpuPerMillion, 1),
          `${fmt(member.rate / single.rate, 2)} · ${fmt(member.cpuPerMillion / single.cpuPerMillion, 2)}`,
        ],
      ],
    ),
    '',
    '## Failover (kill -> every account flowing again)',
    '',
    ...markdownTable(
      ['case', 'seconds', 'ratio to the session timeout (6 s)'],
      [
        ['a member SIGKILLed, the other takes its tasks', fmt(dynamic, 1), fmt(dynamic / (SESSION_MS / 1000), 2)],
        ['a static member SIGKILLed and started again at once', fmt(staticBack, 1), fmt(staticBack / (SESSION_MS / 1000), 2)],
      ],
    ),
    '',
    '## Restore (a totals task opened by a new owner)',
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
