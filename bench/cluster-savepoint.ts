/**
 * Issue 35, point 7: a cluster savepoint's duration against state size. For each key count, one
 * cluster of two members runs the cluster test job (test/fixtures/jobs/cluster-job.ts: 12 source
 * tasks, keyBy -> running totals, keyBy -> 1 s windows, 36 tasks) over one payment per account,
 * so the totals stage holds `accounts` keys of ValueState; once every total is readable
 * read_committed, `weir savepoint --cluster <id>` is timed from start to exit (its request, every
 * task's part at its next checkpoint, the copy of the parts, `_metadata`, `_committed`), and the
 * savepoint folder's size measured.
 *
 *   bash scripts/node-env.sh node bench/cluster-savepoint.ts [accounts,accounts,...]
 * (also run by `npm run bench:cluster`). Uses KAFKA_BROKERS, or starts a local broker.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../src/connectors/kafka/kafka-connection-options.ts';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../src/connectors/kafka/topic-reader.ts';
import { ensureBroker } from '../src/local-kafka/ensure-broker.ts';
import { markdownTable } from './compare/report.ts';

const root = join(import.meta.dirname, '..');
const job = join(root, 'test', 'fixtures', 'jobs', 'cluster-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);

export interface SavepointFigure {
  accounts: number;
  /** `weir savepoint --cluster` from start to exit. */
  seconds: number;
  /** The savepoint folder's size. */
  bytes: number;
}

async function du(folder: string): Promise<number> {
  const { stdout } = await promisify(execFile)('du', ['-sb', folder]);
  return Number(stdout.split('\t')[0]);
}

/** One savepoint of a two-member cluster whose totals stage holds `accounts` keys. */
export async function savepointAt(brokers: BrokerAddress[], accounts: number): Promise<SavepointFigure> {
  const bootstrap = formatBootstrap(brokers);
  const run = randomBytes(3).toString('hex');
  const names = { input: `weir-bench-${run}-sp-in`, totals: `weir-bench-${run}-sp-totals`, windows: `weir-bench-${run}-sp-windows` };
  const admin = new Admin({ clientId: 'weir-bench-savepoint', bootstrapBrokers: [bootstrap] });
  await admin.createTopics({ topics: [names.input], partitions: 12, replicas: 1 });
  await admin.createTopics({ topics: [names.totals, names.windows], partitions: 3, replicas: 1 });
  await admin.close();
  await sleep(1000);
  const connections = new ClusterConnections(brokers);
  const producer = new PlainProducer(connections);
  for (let first = 0; first < accounts; first += 5000) {
    const batch = [];
    for (let a = first; a < Math.min(accounts, first + 5000); a++) {
      const value = JSON.stringify({ seq: a, account: `a${a}`, amount: 1, ts: 1_700_000_000_000 + a });
      batch.push({ topic: names.input, partition: a % 12, key: Buffer.from(`a${a}`), value: Buffer.from(value) });
    }
    await producer.send(batch, -1);
  }
  await connections.close();
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-savepoint-'));
  const cluster = `weir-bench-${run}-sp`;
  const env = { ...process.env, KAFKA_BROKERS: bootstrap, CJ_INPUT: names.input, CJ_TOTALS: names.totals, CJ_WINDOWS: names.windows };
  const members = [0, 1].map(() =>
    spawn(
      process.execPath,
      [join(root, 'bin', 'weir.js'), 'run', job, '--cluster', cluster, '--checkpoint-interval', '1s', '--checkpoint-storage', storage, '--no-ui'],
      { env, stdio: 'ignore' },
    ),
  );
  try {
    const deadline = Date.now() + 900_000;
    while ((await readTopic({ bootstrap: brokers, topic: names.totals, until: 'last-stable-offset' }).catch(() => [])).length < accounts) {
      if (Date.now() > deadline) throw new Error(`${accounts} totals: timed out`);
      await sleep(500);
    }
    await sleep(2500); // a checkpoint after the last record
    const started = performance.now();
    const result = await promisify(execFile)(
      process.execPath,
      [join(root, 'bin', 'weir.js'), 'savepoint', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '10m'],
      { env, maxBuffer: 16 << 20 },
    );
    const seconds = (performance.now() - started) / 1000;
    const path = /savepoint \d+: (\S+)/.exec(result.stdout)?.[1];
    if (path === undefined) throw new Error(`weir savepoint printed no savepoint: ${result.stdout}\n${result.stderr}`);
    return { accounts, seconds, bytes: await du(path) };
  } finally {
    for (const member of members) member.kill('SIGKILL');
    await rm(storage, { recursive: true, force: true });
    const cleanup = new Admin({ clientId: 'weir-bench-savepoint', bootstrapBrokers: [bootstrap] });
    await cleanup.deleteTopics({ topics: Object.values(names) }).catch(() => {});
    await cleanup.close();
  }
}

export function savepointTable(figures: readonly SavepointFigure[]): string[] {
  const fmt = (value: number, digits = 0) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return [
    '## Savepoint duration against state size (`weir savepoint --cluster`, two members, 36 tasks)',
    '',
    ...markdownTable(
      ['keys in the totals stage', 'savepoint folder (bytes)', 'seconds (command start to exit)'],
      figures.map((entry) => [fmt(entry.accounts), fmt(entry.bytes), fmt(entry.seconds, 1)]),
    ),
    '',
  ];
}

if (import.meta.main) {
  const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
  const broker = await ensureBroker({ log });
  try {
    const figures: SavepointFigure[] = [];
    for (const accounts of sizes) {
      log(`savepoint: ${accounts} keys`);
      figures.push(await savepointAt(broker.brokers, accounts));
    }
    console.log(savepointTable(figures).join('\n'));
  } finally {
    await broker.release();
  }
}
