/** What the cluster-mode tests share: the test job's topics, its members, its input and the read_committed audit of its two outputs. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import type { Payment, Total, WindowSum } from '../fixtures/jobs/cluster-job.ts';
import { bootstrapList, createTestTopic, testBrokers } from './kafka.ts';
import { startWeirRun, until, type WeirRun } from './weir-run.ts';

let brokers: BrokerAddress[] = testBrokers();

/** The brokers the helpers below use (a test with a broker of its own). */
export function useClusterBrokers(next: BrokerAddress[]): void {
  brokers = next;
}
export const clusterJobModule = join(import.meta.dirname, '..', 'fixtures', 'jobs', 'cluster-job.ts');

export const BASE_TS = 1_700_000_000_000;

export interface ClusterJobTopics {
  input: string;
  totals: string;
  windows: string;
  remove: () => Promise<void>;
}

/** The job's input (12 partitions) and its two outputs. */
export async function clusterJobTopics(): Promise<ClusterJobTopics> {
  const [input, totals, windows] = await Promise.all([
    createTestTopic(brokers, 'cluster-in', 12),
    createTestTopic(brokers, 'cluster-totals', 3),
    createTestTopic(brokers, 'cluster-windows', 3),
  ]);
  return {
    input: input.topic,
    totals: totals.topic,
    windows: windows.topic,
    remove: async () => {
      for (const topic of [input, totals, windows]) await topic.remove().catch(() => {});
    },
  };
}

/** An account's partition of the 12: records of one account stay in order in one partition. */
export const partitionOf = (account: string) => Number(account.slice(1)) % 12;

export async function producePayments(topic: string, payments: Payment[]): Promise<void> {
  const connections = new ClusterConnections(brokers);
  try {
    await new PlainProducer(connections).send(
      payments.map((entry) => ({ topic, partition: partitionOf(entry.account), key: Buffer.from(entry.account), value: Buffer.from(JSON.stringify(entry)) })),
      -1,
    );
  } finally {
    await connections.close();
  }
}

export const readJson = async <T>(topic: string): Promise<T[]> =>
  (await readTopic({ bootstrap: brokers, topic })).map((record) => JSON.parse(String(record.value)) as T);

/** `weir run <the cluster job> --cluster <cluster>`; killed (woken first, if paused) by the returned cleanup. */
export function startClusterMember(options: {
  cluster: string;
  storage: string;
  topics: ClusterJobTopics;
  interval: string;
  env?: Record<string, string>;
  args?: string[];
  /** Serve the member's dashboard and REST API on a free port (else --no-ui). */
  ui?: boolean;
  /** Runs the member under this command (`ip netns exec <ns>`). */
  wrap?: string[];
  /** The job's module (default the cluster job). */
  module?: string;
}): WeirRun {
  return startWeirRun(
    [
      options.module ?? clusterJobModule,
      '--cluster',
      options.cluster,
      '--checkpoint-interval',
      options.interval,
      '--checkpoint-storage',
      options.storage,
      '--session-timeout',
      '6s',
      ...(options.ui === true ? ['--ui-port', '0'] : ['--no-ui']),
      // One task thread per member unless the test asks for more (task-threads.test.ts): a test
      // starts up to four members on two cores, and the timing bounds some tests check (a staying
      // task's commits within a session timeout) are about the group, not the threads.
      ...(options.args?.includes('--cluster-threads') === true ? [] : ['--cluster-threads', '1']),
      ...(options.args ?? []),
    ],
    {
      ...options.env,
      CJ_INPUT: options.topics.input,
      CJ_TOTALS: options.topics.totals,
      CJ_WINDOWS: options.topics.windows,
      KAFKA_BROKERS: bootstrapList(brokers).join(','),
    },
    options.wrap,
  );
}

/** `weir run <the cluster job>` as one process (no --cluster), e.g. restoring a cluster's savepoint with `--from-savepoint`. */
export function startJobProcess(options: {
  storage: string;
  topics: ClusterJobTopics;
  interval: string;
  args?: string[];
  ui?: boolean;
  env?: Record<string, string>;
  /** The job's module (default the cluster job). */
  module?: string;
}): WeirRun {
  return startWeirRun(
    [
      options.module ?? clusterJobModule,
      '--checkpoint-interval',
      options.interval,
      '--checkpoint-storage',
      options.storage,
      ...(options.ui === true ? ['--ui-port', '0'] : ['--no-ui']),
      ...(options.args ?? []),
    ],
    {
      ...options.env,
      CJ_INPUT: options.topics.input,
      CJ_TOTALS: options.topics.totals,
      CJ_WINDOWS: options.topics.windows,
      KAFKA_BROKERS: bootstrapList(brokers).join(','),
    },
  );
}

/** The brokers of the cluster tests, as KAFKA_BROKERS says them (for `weir savepoint --cluster` and the like). */
export const clusterBrokersEnv = (): Record<string, string> => ({ KAFKA_BROKERS: bootstrapList(brokers).join(',') });

export async function stopMember(run: WeirRun): Promise<void> {
  run.child.kill('SIGCONT');
  run.child.kill('SIGKILL');
  await run.exited;
}

/** Waits until the totals topic holds `count` records (read_committed); a timeout names how many it held. */
export async function totalsAtLeast(topics: ClusterJobTopics, count: number): Promise<void> {
  let held = 0;
  try {
    await until(
      `${count} totals`,
      async () => {
        held = (await readJson<Total>(topics.totals)).length;
        return held >= count ? true : undefined;
      },
      180_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}: the totals topic holds ${held}`);
  }
}

/** Runs `story`; a failure carries the last lines of every member's stderr, so a CI log shows what the members did. */
export async function withMemberLogs(members: readonly WeirRun[], story: () => Promise<void>): Promise<void> {
  try {
    await story();
  } catch (error) {
    // WEIR_TEST_MEMBER_LINES: how many of each member's last stderr lines a failure shows (default 40).
    const shown = Number(process.env.WEIR_TEST_MEMBER_LINES) || 40;
    const logs = members.map((run, index) => {
      const lines = run.stderr().trimEnd().split('\n');
      return `--- member ${index} (pid ${run.child.pid}, exit ${run.child.exitCode ?? run.child.signalCode ?? 'none'}), last ${shown} of ${lines.length} stderr lines:\n${lines.slice(-shown).join('\n')}`;
    });
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`, { cause: error });
  }
}

/** Each partition's record far ahead in event time: every window of the records before closes. */
export function closers(firstSeq: number, partitions: readonly number[], ts: number): Payment[] {
  return partitions.map((partition, index) => ({ seq: firstSeq + index, account: `a${partition}`, amount: 1, ts }));
}

/** The windows one process computes from the input: per account and 1 s window, the sum and count. */
export function expectedWindows(payments: readonly Payment[]): Map<string, { sum: number; count: number }> {
  const windows = new Map<string, { sum: number; count: number }>();
  for (const entry of payments) {
    const key = `${entry.account}@${entry.ts - (entry.ts % 1000)}`;
    const window = windows.get(key) ?? { sum: 0, count: 0 };
    window.sum += entry.amount;
    window.count++;
    windows.set(key, window);
  }
  return windows;
}

/**
 * Waits for every output, then audits it read_committed: every input in the totals once, every
 * running total right (in input order per account), every window of `windowed` once and right.
 */
export async function auditClusterOutputs(topics: ClusterJobTopics, inputs: readonly Payment[], windowed: readonly Payment[]): Promise<void> {
  // The input itself first: what the test wrote, each payment once (else a failure below would blame the job).
  const written = (await readJson<Payment>(topics.input)).map((payment) => payment.seq);
  assert.equal(new Set(written).size, written.length, 'the input holds no payment twice');
  assert.equal(written.length, inputs.length, 'the input holds every payment');
  const expected = expectedWindows(windowed);
  await totalsAtLeast(topics, inputs.length);
  await until('every window', async () => ((await readJson<WindowSum>(topics.windows)).length >= expected.size ? true : undefined), 180_000);
  await sleep(3000); // anything a member still commits would show now
  const bySeq = new Map<number, Total>();
  const where = new Map<number, string>();
  for (const raw of await readTopic({ bootstrap: brokers, topic: topics.totals })) {
    const record = JSON.parse(String(raw.value)) as Total;
    const here = `partition ${raw.partition} offset ${raw.offset} producer ${raw.producerId}`;
    assert.equal(bySeq.has(record.seq), false, `seq ${record.seq} is in the totals twice: at ${where.get(record.seq)} and at ${here}`);
    bySeq.set(record.seq, record);
    where.set(record.seq, here);
  }
  assert.equal(bySeq.size, inputs.length, 'every input is in the totals once');
  const running = new Map<string, number>();
  for (const entry of inputs) {
    const next = (running.get(entry.account) ?? 0) + entry.amount;
    running.set(entry.account, next);
    assert.equal(bySeq.get(entry.seq)?.total, next, `the running total of ${entry.account} at seq ${entry.seq}`);
  }
  const seen = new Set<string>();
  for (const record of await readJson<WindowSum>(topics.windows)) {
    const key = `${record.account}@${record.start}`;
    assert.equal(seen.has(key), false, `window ${key} was emitted twice`);
    seen.add(key);
    assert.deepEqual({ sum: record.sum, count: record.count }, expected.get(key), `window ${key}`);
  }
  assert.equal(seen.size, expected.size, 'every window of the input, once');
}
