/**
 * What the same-output test (test/integration/cluster/same-output.test.ts) shares: a job module run
 * once as one process (`weir run`) and once as three cluster members (`weir run --cluster`) side by
 * side, each until its output is complete, and the read_committed comparison of the two outputs.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../../src/connectors/kafka/plain-producer.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import { bootstrapList, createNamedTopic } from './kafka.ts';
import { startWeirRun, type WeirRun } from './weir-run.ts';

export const MEMBERS = 3;
export const INTERVAL = '500ms';

/** A record to write: its partition, key and JSON value. */
export interface InputRecord {
  partition: number;
  key: string;
  value: unknown;
}

export async function produceJson(brokers: readonly BrokerAddress[], topic: string, records: readonly InputRecord[]): Promise<void> {
  const connections = new ClusterConnections(brokers);
  try {
    const producer = new PlainProducer(connections);
    for (let first = 0; first < records.length; first += 2000) {
      await producer.send(
        records.slice(first, first + 2000).map((record) => ({
          topic,
          partition: record.partition,
          key: Buffer.from(record.key),
          value: Buffer.from(JSON.stringify(record.value)),
        })),
        -1,
      );
    }
  } finally {
    await connections.close();
  }
}

/** A topic's committed records as key -> values (JSON text), each key's values in offset order (one key is in one partition). */
export async function readByKey(brokers: readonly BrokerAddress[], topic: string): Promise<Map<string, string[]>> {
  const records = await readTopic({ bootstrap: [...brokers], topic, until: 'last-stable-offset' });
  records.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
  const byKey = new Map<string, string[]>();
  for (const record of records) {
    const key = String(record.key);
    const values = byKey.get(key) ?? [];
    values.push(String(record.value));
    byKey.set(key, values);
  }
  return byKey;
}

export const countOf = (byKey: Map<string, string[]>): number => [...byKey.values()].reduce((sum, values) => sum + values.length, 0);

/**
 * The two outputs are equal: the same keys, and per key the same values, in the same order when
 * `ordered` (a keyed output whose per-key order the job defines), else as multisets.
 */
export function assertSameOutput(what: string, oneProcess: Map<string, string[]>, cluster: Map<string, string[]>, ordered: boolean): void {
  const normal = (byKey: Map<string, string[]>) =>
    Object.fromEntries([...byKey.keys()].sort().map((key) => [key, ordered ? (byKey.get(key) as string[]) : [...(byKey.get(key) as string[])].sort()]));
  const a = normal(oneProcess);
  const b = normal(cluster);
  const differing = Object.keys({ ...a, ...b }).filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]));
  assert.deepEqual(
    { keys: differing.length, first: differing.slice(0, 3).map((key) => ({ key, oneProcess: a[key]?.slice(0, 5), cluster: b[key]?.slice(0, 5) })) },
    { keys: 0, first: [] },
    `${what}: one process and ${MEMBERS} members wrote the same records${ordered ? ' in the same order per key' : ''} (${countOf(oneProcess)} against ${countOf(cluster)})`,
  );
}

export interface BothRuns {
  oneProcess: WeirRun;
  /** Aborted by stop(): what still polls for the runs' output gives up. */
  signal: AbortSignal;
  members: WeirRun[];
  /** Stops every process (one process with SIGTERM, the members with SIGKILL: their output is read read_committed). */
  stop(): Promise<void>;
  /** Fails at once, with its stderr, when a process of `runs` exited (a refusal) before `done` resolved. */
  watch<T>(runs: readonly WeirRun[], what: string, done: Promise<T>): Promise<T>;
}

export interface RunOptions {
  module: string;
  /** The brokers of each run (the same, or one each when the job's topic names are fixed). */
  brokers: { oneProcess: readonly BrokerAddress[]; cluster: readonly BrokerAddress[] };
  /** The environment of each run (its topics, its database); KAFKA_BROKERS is added. */
  oneProcessEnv: Record<string, string>;
  clusterEnv: Record<string, string>;
  /** More `weir run` options for both runs (the same for both: e.g. --max-parallelism). */
  args?: string[];
  /** More options for the members only (cluster settings: e.g. --keyed-tasks). */
  clusterArgs?: string[];
  label: string;
}

/** Starts the job as one process and as MEMBERS cluster members at once, each with its own checkpoint storage. */
export async function startBoth(options: RunOptions): Promise<BothRuns> {
  const storage = await mkdtemp(join(tmpdir(), `weir-same-${options.label}-`));
  const kafka = (brokers: readonly BrokerAddress[]) => ({ KAFKA_BROKERS: bootstrapList(brokers).join(',') });
  const common = ['--checkpoint-interval', INTERVAL, '--no-ui', ...(options.args ?? [])];
  const oneProcess = startWeirRun([options.module, '--checkpoint-storage', join(storage, 'one'), ...common], {
    ...options.oneProcessEnv,
    ...kafka(options.brokers.oneProcess),
  });
  const cluster = `weir-test-same-${options.label}-${randomBytes(4).toString('hex')}`;
  const members = Array.from({ length: MEMBERS }, () =>
    startWeirRun(
      [
        options.module,
        '--cluster',
        cluster,
        '--session-timeout',
        '6s',
        '--checkpoint-storage',
        join(storage, 'cluster'),
        ...common,
        ...(options.clusterArgs ?? []),
      ],
      {
        ...options.clusterEnv,
        ...kafka(options.brokers.cluster),
      },
    ),
  );
  const all = [oneProcess, ...members];
  const stopped = new AbortController();
  return {
    oneProcess,
    members,
    signal: stopped.signal,
    stop: async () => {
      stopped.abort();
      oneProcess.child.kill('SIGTERM');
      for (const member of members) member.child.kill('SIGKILL');
      const timer = setTimeout(() => oneProcess.child.kill('SIGKILL'), 15_000);
      await Promise.all(all.map((run) => run.exited));
      clearTimeout(timer);
      await rm(storage, { recursive: true, force: true });
    },
    watch: async <T>(runs: readonly WeirRun[], what: string, done: Promise<T>): Promise<T> => {
      let settled = false;
      const exit = Promise.race(runs.map((run) => run.exited.then(() => run))).then((run) => {
        if (settled) return undefined as T;
        const lines = run.stderr().trimEnd().split('\n');
        throw new Error(`${what}: pid ${run.child.pid} exited (${run.child.exitCode ?? run.child.signalCode}) first:\n${lines.slice(-25).join('\n')}`);
      });
      try {
        return await Promise.race([done, exit]);
      } finally {
        settled = true;
      }
    },
  };
}

/**
 * What `actual` lacks of `expected`, per key (as multisets): the first keys short, each with the
 * values missing; an empty string when nothing is.
 */
export async function shortfall(expected: Map<string, string[]>, actual: () => Promise<Map<string, string[]>>): Promise<string> {
  const held = await actual();
  const short: string[] = [];
  for (const [key, values] of expected) {
    const left = [...(held.get(key) ?? [])];
    const missing = values.filter((value) => {
      const at = left.indexOf(value);
      if (at < 0) return true;
      left.splice(at, 1);
      return false;
    });
    if (missing.length > 0) short.push(`${key}: ${missing.slice(0, 3).join(' ')}${missing.length > 3 ? ` (+${missing.length - 3})` : ''}`);
  }
  return short.length === 0 ? '' : `missing ${short.length} keys' records: ${short.slice(0, 5).join('; ')}`;
}

/**
 * Polls `count()` until it reaches `expected`, then waits two intervals more (what a run still
 * commits would show); fails after `timeoutMs`, or once `signal` (the runs stopped) is aborted.
 * On a timeout, `missing()` (when given) says what is short.
 */
export async function outputComplete(
  what: string,
  count: () => Promise<number>,
  expected: number,
  signal: AbortSignal,
  timeoutMs = 150_000,
  missing?: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let held = -1;
  for (;;) {
    if (signal.aborted) throw new Error(`${what}: the runs were stopped (${held} of ${expected})`);
    held = await count().catch(() => held);
    if (held >= expected) break;
    if (Date.now() > deadline) {
      const detail = missing === undefined ? '' : await missing().catch((error: Error) => `(what is missing not read: ${error.message})`);
      throw new Error(`timed out waiting for ${what}: ${held} of ${expected}${detail === '' ? '' : `; ${detail}`}`);
    }
    await sleep(250);
  }
  await sleep(1000);
}

/** Runs `story`; a failure carries the last lines of each process's stderr. */
export async function withLogs(both: BothRuns, story: () => Promise<void>): Promise<void> {
  try {
    await story();
  } catch (error) {
    const logs = [both.oneProcess, ...both.members].map((run, index) => {
      const lines = run.stderr().trimEnd().split('\n');
      return `--- ${index === 0 ? 'one process' : `member ${index}`} (pid ${run.child.pid}, exit ${run.child.exitCode ?? run.child.signalCode ?? 'none'}), last 15 of ${lines.length} stderr lines:\n${lines.slice(-15).join('\n')}`;
    });
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`, { cause: error });
  }
}

/** Creates topics of fixed names (an example's own) on a broker of the test's own; returns once every partition is led. */
export async function createFixedTopics(brokers: readonly BrokerAddress[], topics: Record<string, number>): Promise<void> {
  for (const [topic, partitions] of Object.entries(topics)) await createNamedTopic(brokers, topic, partitions);
}
