import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Admin } from '@platformatic/kafka';
import { type BrokerAddress, formatBootstrap } from '../connectors/kafka/bootstrap.ts';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { readTopic } from '../connectors/kafka/topic-reader.ts';
import { committableOf, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { BalanceUpdate, Payment } from './payments-job.ts';

export interface PaymentsDemoOptions {
  brokers: BrokerAddress[];
  records: number;
  accounts: number;
  /** Payments per second written to the input; undefined: as fast as possible. */
  rate: number | undefined;
  crashes: number;
  folder: string;
  log: (line: string) => void;
}

export interface PaymentsAudit {
  input: string;
  output: string;
  committedInputs: number;
  abortedInputs: number;
  outputs: number;
  duplicates: number;
  missing: number;
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
const jobModule = fileURLToPath(new URL(`./payments-job${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
const weirBin = fileURLToPath(new URL('../../bin/weir.js', import.meta.url));

/**
 * The showcase: payments written to Kafka in transactions (every seventh one aborted), the
 * exactly-once balances job run and SIGKILLed mid-run `crashes` times, resumed each time, and the
 * output audited read_committed.
 */
export async function runPaymentsDemo(options: PaymentsDemoOptions): Promise<PaymentsAudit> {
  const started = Date.now();
  const { brokers, log } = options;
  const run = Date.now().toString(36);
  const input = `weir-demo-payments-${run}`;
  const output = `weir-demo-balances-${run}`;
  const admin = new Admin({ clientId: 'weir-demo', bootstrapBrokers: [formatBootstrap(brokers)] });
  try {
    await admin.createTopics({ topics: [input, output], partitions: 4, replicas: 1 });
  } finally {
    await admin.close();
  }
  log(`topics: ${input} (payments) -> ${output} (balances)`);

  const { committed, aborted } = await writePayments(brokers, input, options);
  log(`wrote ${committed} payments in committed transactions and ${aborted} in aborted ones`);

  const checkpoints = join(options.folder, `checkpoints-${run}`);
  const env = { ...process.env, KAFKA_BROKERS: formatBootstrap(brokers), WEIR_DEMO_INPUT: input, WEIR_DEMO_OUTPUT: output, WEIR_DEMO_CHECKPOINTS: checkpoints };
  let kills = 0;
  for (let round = 0; round <= options.crashes; round++) {
    const last = round === options.crashes;
    log(last ? 'running the job to the end...' : `running the job (it will be killed with SIGKILL, ${round + 1} of ${options.crashes})...`);
    const child = spawn(process.execPath, [weirBin, 'run', jobModule, '--ui-port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const progress = watch(child, log);
    if (!last) {
      // A random moment after the run's first checkpoint, while input is still flowing.
      await progress.waitFor(/checkpoint \d+ completed/, 120_000);
      await sleep(Math.floor(Math.random() * 300));
      if (child.exitCode === null && !/every input has ended/.test(progress.stderr())) {
        child.kill('SIGKILL');
        kills++;
        log(`killed the job with SIGKILL (kill ${kills})`);
      } else {
        log('the job reached the end of its input before it could be killed (more --records make room for crashes)');
      }
    }
    const exit = await progress.exit;
    if (last && exit !== 0) throw new Error(`the job failed (exit ${exit}):\n${progress.stderr()}`);
  }
  await rm(checkpoints, { recursive: true, force: true });

  log('auditing the output read_committed...');
  const audit = await auditBalances(brokers, output, options.records, options.accounts);
  return { input, output, committedInputs: committed, abortedInputs: aborted, ...audit, seconds: (Date.now() - started) / 1000, kills };
}

async function writePayments(brokers: BrokerAddress[], topic: string, options: PaymentsDemoOptions): Promise<{ committed: number; aborted: number }> {
  const connections = new ClusterConnections(brokers, { clientId: 'weir-demo-writer' });
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
  const message = (seq: number) => {
    const payment: Payment = { seq, account: accountOf(seq % ABORTED_BASE, options.accounts), amount: amountOf(seq % ABORTED_BASE) };
    return { topic, partition: seq % 4, key: Buffer.from(payment.account), value: Buffer.from(JSON.stringify(payment)) };
  };
  let aborted = 0;
  const started = Date.now();
  try {
    for (let first = 0, batch = 0; first < options.records; first += 1000, batch++) {
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
  return { committed: options.records, aborted };
}

/** Reads the balances read_committed and checks them against the committed payments. */
export async function auditBalances(brokers: BrokerAddress[], output: string, records: number, accounts: number) {
  const updates = (await readTopic({ bootstrap: brokers, topic: output, timeoutMs: 120_000 })).map(
    (record) => JSON.parse(String(record.value)) as BalanceUpdate,
  );
  const seen = new Map<number, number>();
  let fromAborted = 0;
  for (const update of updates) {
    if (update.seq >= ABORTED_BASE) fromAborted++;
    seen.set(update.seq, (seen.get(update.seq) ?? 0) + 1);
  }
  let duplicates = 0;
  for (const times of seen.values()) if (times > 1) duplicates += times - 1;
  let missing = 0;
  const expected = new Map<string, number>();
  for (let seq = 0; seq < records; seq++) {
    if (!seen.has(seq)) missing++;
    const account = accountOf(seq, accounts);
    expected.set(account, (expected.get(account) ?? 0) + amountOf(seq));
  }
  // Each account's balances must rise by exactly each payment's amount and end at the sum of its payments.
  const byAccount = new Map<string, BalanceUpdate[]>();
  for (const update of updates) byAccount.set(update.account, [...(byAccount.get(update.account) ?? []), update]);
  let wrongBalances = 0;
  for (const [account, total] of expected) {
    const list = (byAccount.get(account) ?? []).sort((a, b) => a.balance - b.balance);
    let previous = 0;
    let exact = true;
    for (const update of list) {
      if (update.balance - previous !== update.amount) exact = false;
      previous = update.balance;
    }
    if (!exact || previous !== total) wrongBalances++;
  }
  return { outputs: updates.length, duplicates, missing, fromAborted, wrongBalances, accounts: expected.size };
}

/** Relays a job process's progress lines and lets the caller wait for one. */
function watch(child: ChildProcess, log: (line: string) => void) {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderr += text;
    for (const line of text.split('\n')) if (/starting job|every input has ended|REST API at/.test(line)) log(`  job: ${line.trim()}`);
  });
  const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return {
    exit,
    stderr: () => stderr + stdout,
    waitFor: async (pattern: RegExp, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(stderr) && child.exitCode === null && Date.now() < deadline) await sleep(20);
    },
  };
}
