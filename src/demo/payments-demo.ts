import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Admin, type ConnectionOptions } from '@platformatic/kafka';
import { auditTopic } from '../audit/audit-topic.ts';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import { LATEST_OFFSET, listOffsets } from '../connectors/kafka/partition-fetcher.ts';
import { committableOf, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import { type WriteProgress, watchJobProcess } from './job-process-watch.ts';
import type { BalanceUpdate, MinuteTotal, Payment } from './payments-job.ts';

export interface PaymentsDemoOptions {
  brokers: BrokerAddress[];
  /** TLS and SASL for every connection of the demo (its job's connectors take them from `env`). */
  connection?: ConnectionOptions;
  /** Extra environment of the job's `weir run` processes: the Kafka settings (WEIR_KAFKA_*). */
  env?: NodeJS.ProcessEnv;
  records: number;
  accounts: number;
  /** Payments per second written to the input while the job runs; undefined: as fast as possible. */
  rate: number | undefined;
  crashes: number;
  folder: string;
  /** The job's dashboard port (0: a free one). */
  uiPort: number;
  log: (line: string) => void;
}

export interface PaymentsAudit {
  input: string;
  output: string;
  totalsTopic: string;
  /** Per-account totals per minute of event time: windows expected, and those missing, doubled or wrong. */
  windows: number;
  windowsMissing: number;
  windowsDuplicated: number;
  windowsWrong: number;
  committedInputs: number;
  abortedInputs: number;
  outputs: number;
  duplicates: number;
  missing: number;
  /** Balance updates whose seq is neither a committed nor an aborted payment. */
  unexpected: number;
  fromAborted: number;
  wrongBalances: number;
  accounts: number;
  seconds: number;
  kills: number;
}

/** Sequence numbers of payments written in aborted transactions start here; none may reach the output. */
export const ABORTED_BASE = 1_000_000_000;
const amountOf = (seq: number) => 1 + ((seq * 7919) % 100);
const accountOf = (seq: number, accounts: number) => `acct-${String(seq % accounts).padStart(4, '0')}`;
/** Event time: 10,000 payments per minute from 2026-01-01, each up to 3 s out of order. */
const EVENT_EPOCH = Date.UTC(2026, 0, 1);
export const eventTimeOf = (seq: number) => EVENT_EPOCH + seq * 6 - ((seq * 7919) % 3000);
const MINUTE = 60_000;
const jobModule = fileURLToPath(new URL(`./payments-job${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
const weirBin = fileURLToPath(new URL('../../bin/weir.js', import.meta.url));

/**
 * The showcase: payments streamed into Kafka in transactions (every seventh one aborted) while the
 * exactly-once balances job runs; the job is SIGKILLed mid-stream `crashes` times and resumed each
 * time from its latest checkpoint. Once the input is written and the job has caught up (its
 * consumer group's lag is 0), it is stopped with a savepoint through its REST API, and the output
 * is audited read_committed.
 */
export async function runPaymentsDemo(options: PaymentsDemoOptions): Promise<PaymentsAudit> {
  const started = Date.now();
  const { brokers, log } = options;
  const run = Date.now().toString(36);
  const input = `weir-demo-payments-${run}`;
  const output = `weir-demo-balances-${run}`;
  const totalsTopic = `weir-demo-totals-${run}`;
  const admin = new Admin({ clientId: 'weir-demo', bootstrapBrokers: [formatBootstrap(brokers)], ...options.connection });
  try {
    await admin.createTopics({ topics: [input, output, totalsTopic], partitions: 4, replicas: 1 });
  } finally {
    await admin.close();
  }
  log(`topics: ${input} (payments) -> ${output} (balances), ${totalsTopic} (totals per account and minute of event time)`);

  const checkpoints = join(options.folder, `checkpoints-${run}`);
  let uiPort = options.uiPort;
  if (uiPort !== 0 && !(await portFree(uiPort))) {
    log(`port ${uiPort} is taken: the job's dashboard gets a free port instead (--ui-port picks one)`);
    uiPort = 0;
  }
  const group = `weir-demo-${run}`;
  const env = {
    ...process.env,
    ...options.env,
    KAFKA_BROKERS: formatBootstrap(brokers),
    WEIR_DEMO_INPUT: input,
    WEIR_DEMO_OUTPUT: output,
    WEIR_DEMO_TOTALS: totalsTopic,
    WEIR_DEMO_CHECKPOINTS: checkpoints,
    WEIR_DEMO_GROUP: group,
  };
  const lag = new ConsumerLag(brokers, input, group, options.connection ?? {});
  const progress: WriteProgress = { written: 0, allowed: 0, done: false };
  log(
    `streaming ${options.records.toLocaleString('en-US')} payments into ${input} ${options.rate === undefined ? 'as fast as possible' : `at ${options.rate.toLocaleString('en-US')}/s`} while the job runs`,
  );
  const writing = writePayments(brokers, input, options, progress);
  writing.catch(() => {});
  let kills = 0;
  try {
    for (let round = 0; round <= options.crashes; round++) {
      const last = round === options.crashes;
      log(last ? 'running the job until it has caught up...' : `running the job (it will be killed with SIGKILL, ${round + 1} of ${options.crashes})...`);
      const child = spawn(process.execPath, [weirBin, 'run', jobModule, '--ui-port', String(uiPort), '--log-level', 'debug'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }); // debug: the demo waits for the job's first "checkpoint N completed" line before it kills it
      const job = watchJobProcess(child, log, options.records, progress, lag);
      if (!last) {
        // After the run's first checkpoint, its share of the payments is written while it runs (so
        // every run has work, however long the start took), and the kill lands while it is at it.
        await job.waitFor(/checkpoint \d+ completed/, 120_000);
        const share = Math.ceil(options.records / (options.crashes + 1));
        progress.allowed = Math.min(options.records, (round + 1) * share);
        await sleep(Math.random() * 0.6 * (options.rate === undefined ? 0 : (share / options.rate) * 1000));
        // Only while it is at work (running, with input left), so the kill cuts work in progress.
        const behind = await job.busy(30_000);
        if (child.exitCode === null) {
          child.kill('SIGKILL');
          kills++;
          log(
            `killed the job with SIGKILL (kill ${kills})${behind === undefined ? '' : ` while it worked through its input, ${behind.toLocaleString('en-US')} records behind`}`,
          );
        }
        const exit = await job.exit;
        if (kills < round + 1) throw new Error(`the job exited (code ${exit}) before it could be killed:\n${job.stderr()}`);
        continue;
      }
      progress.allowed = options.records;
      const { committed } = await writing;
      // Running (its REST API has the job), then caught up: the lag may be 0 before this run has started.
      const running = async () => {
        const url = job.url();
        if (url === undefined) return false;
        return ((await (await fetch(`${url}/api/job`)).json()) as { state?: string }).state === 'running';
      };
      await until('the job to run', 180_000, async () => child.exitCode !== null || (await running()), job);
      await until('the job to catch up with its input (consumer lag 0)', 180_000, async () => (await lag.total()) === 0n || child.exitCode !== null, job);
      if (child.exitCode !== null) throw new Error(`the job exited (code ${child.exitCode}):\n${job.stderr()}`);
      log(
        `the job has read all ${committed.toLocaleString('en-US')} committed payments: stopping it with a drained savepoint (POST ${job.url()}/api/stop?drain=true; the last windows fire)`,
      );
      const answer = await fetch(`${job.url()}/api/stop?drain=true`, { method: 'POST' });
      const body = (await answer.json()) as { checkpointId?: number; path?: string; error?: string };
      if (!answer.ok) throw new Error(`stop with savepoint failed: ${body.error}`);
      log(`  savepoint ${body.checkpointId} at ${body.path}`);
      const exit = await job.exit;
      if (exit !== 0) throw new Error(`the job failed (exit ${exit}):\n${job.stderr()}`);
    }
  } finally {
    progress.done = true;
    await lag.close();
  }
  const { committed, aborted } = await writing;
  await rm(checkpoints, { recursive: true, force: true });

  log('auditing the output read_committed...');
  const audit = await auditBalances(brokers, output, options.records, options.accounts);
  const windows = await auditMinuteTotals(brokers, totalsTopic, options.records, options.accounts);
  return {
    input,
    output,
    totalsTopic,
    committedInputs: committed,
    abortedInputs: aborted,
    ...audit,
    ...windows,
    seconds: (Date.now() - started) / 1000,
    kills,
  };
}

async function writePayments(
  brokers: BrokerAddress[],
  topic: string,
  options: PaymentsDemoOptions,
  progress: WriteProgress,
): Promise<{ committed: number; aborted: number }> {
  const connections = new ClusterConnections(brokers, { clientId: 'weir-demo-writer', ...options.connection });
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
  const message = (seq: number) => {
    const payment: Payment = {
      seq,
      account: accountOf(seq % ABORTED_BASE, options.accounts),
      amount: amountOf(seq % ABORTED_BASE),
      ts: eventTimeOf(seq % ABORTED_BASE),
    };
    return { topic, partition: seq % 4, key: Buffer.from(payment.account), value: Buffer.from(JSON.stringify(payment)) };
  };
  let aborted = 0;
  let started = Date.now();
  try {
    for (let first = 0, batch = 0; first < options.records && !progress.done; first += 1000, batch++) {
      // The run's share: wait for the next run to be under way (its first checkpoint), then go on at the rate from there.
      if (first >= progress.allowed) {
        while (first >= progress.allowed && !progress.done) await sleep(20);
        started = Date.now() - (options.rate === undefined ? 0 : (first / options.rate) * 1000);
      }
      if (options.rate !== undefined) {
        const due = started + (first / options.rate) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      const transaction = await driver.initTransaction(`${topic}-writer`);
      await driver.send(
        transaction,
        Array.from({ length: Math.min(1000, options.records - first) }, (_, i) => message(first + i)),
      );
      await driver.commit(committableOf(transaction));
      progress.written = Math.min(options.records, first + 1000);
      if (batch % 7 === 3) {
        const doomed = await driver.initTransaction(`${topic}-writer`);
        await driver.send(
          doomed,
          Array.from({ length: 200 }, (_, i) => message(ABORTED_BASE + first + i)),
        );
        await driver.abort(doomed);
        aborted += 200;
      }
    }
  } finally {
    await connections.close();
  }
  return { committed: progress.written, aborted };
}

/** The job's consumer group lag on the input: last stable offsets minus the offsets its checkpoints committed. */
class ConsumerLag {
  readonly #connections: ClusterConnections;
  readonly #admin: Admin;
  readonly #topic: string;
  readonly #group: string;

  constructor(brokers: BrokerAddress[], topic: string, group: string, connection: ConnectionOptions) {
    this.#connections = new ClusterConnections(brokers, { clientId: 'weir-demo-lag', ...connection });
    this.#admin = new Admin({ clientId: 'weir-demo-lag', bootstrapBrokers: [formatBootstrap(brokers)], ...connection });
    this.#topic = topic;
    this.#group = group;
  }

  async total(): Promise<bigint> {
    const info = await this.#connections.topic(this.#topic);
    const ends = await listOffsets(this.#connections, info, info.partitions, 'read_committed', LATEST_OFFSET);
    const committed = new Map<number, bigint>();
    for (const group of await this.#admin.listConsumerGroupOffsets({ groups: [this.#group] })) {
      for (const topic of group.topics) {
        if (topic.name !== this.#topic) continue;
        for (const partition of topic.partitions) committed.set(partition.partitionIndex, partition.committedOffset);
      }
    }
    let lag = 0n;
    for (const [partition, end] of ends) {
      const at = committed.get(partition) ?? 0n;
      if (end > at) lag += end - (at < 0n ? 0n : at);
    }
    return lag;
  }

  async close(): Promise<void> {
    await this.#admin.close().catch(() => {});
    await this.#connections.close().catch(() => {});
  }
}

async function until(what: string, timeoutMs: number, done: () => Promise<boolean>, job: { stderr(): string }): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${job.stderr()}`);
    await sleep(200);
  }
}

/** Reads the per-account totals per minute read_committed and checks each against the committed payments. */
export async function auditMinuteTotals(brokers: BrokerAddress[], topic: string, records: number, accounts: number) {
  const expected = new Map<string, { total: number; payments: number }>();
  for (let seq = 0; seq < records; seq++) {
    const key = `${accountOf(seq, accounts)}@${Math.floor(eventTimeOf(seq) / MINUTE) * MINUTE}`;
    const window = expected.get(key) ?? { total: 0, payments: 0 };
    window.total += amountOf(seq);
    window.payments++;
    expected.set(key, window);
  }
  const audit = await auditTopic({
    bootstrap: brokers,
    topic,
    timeoutMs: 120_000,
    parse: (record) => JSON.parse(String(record.value)) as MinuteTotal,
    idOf: (total) => `${total.account}@${total.minute}`,
    expected: { kind: 'set', ids: new Set(expected.keys()) },
    check: (total, key) => {
      const want = expected.get(key);
      return want !== undefined && total.total === want.total && total.payments === want.payments;
    },
  });
  return {
    windows: expected.size,
    windowsMissing: audit.missing.ids,
    windowsDuplicated: audit.duplicates.copies,
    // A window with a wrong total, or one no committed payment falls in.
    windowsWrong: audit.wrong.ids + audit.unexpected.ids,
  };
}

/** Reads the balances read_committed and checks them against the committed payments. */
export async function auditBalances(brokers: BrokerAddress[], output: string, records: number, accounts: number) {
  const expected = new Map<string, number>();
  for (let seq = 0; seq < records; seq++) {
    const account = accountOf(seq, accounts);
    expected.set(account, (expected.get(account) ?? 0) + amountOf(seq));
  }
  const audit = await auditTopic({
    bootstrap: brokers,
    topic: output,
    timeoutMs: 120_000,
    parse: (record) => JSON.parse(String(record.value)) as BalanceUpdate,
    idOf: (update) => update.seq,
    expected: { kind: 'sequence', count: records },
    fromAborted: (seq) => seq >= ABORTED_BASE,
    // Each account's balances must rise by exactly each payment's amount and end at the sum of its payments.
    running: { keyOf: (update) => update.account, valueOf: (update) => update.balance, deltaOf: (update) => update.amount, expectedFinal: expected },
  });
  return {
    outputs: audit.records,
    duplicates: audit.duplicates.copies,
    missing: audit.missing.ids,
    unexpected: audit.unexpected.records,
    fromAborted: audit.fromAborted.records,
    wrongBalances: audit.wrongKeys.length,
    accounts: expected.size,
  };
}

function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}
