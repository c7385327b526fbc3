/**
 * bench:cluster's case 1 (issue 35, point 7): the job of bench:compare (bench/jobs/compare-weir-job.ts,
 * unchanged: a 4-partition input, keyBy, running count per key, exactly-once Kafka output) at
 * saturation, over one pre-filled input read by each run from its start, checkpoints every 1 s:
 *  - one process: `weir run --parallelism 2` (its worker threads default to the cores);
 *  - one cluster member: `weir run --cluster` (`--cluster-threads` default: the cores);
 *  - two cluster members on the same host, each `--cluster-threads 1` (the two cores between them);
 *  - one member again with `--max-parallelism 8` (12 tasks instead of 132: what the task count costs).
 * Records/s from the start of the process(es) until every output record is readable
 * read_committed, and while 10% to 90% of them are written (start-up left out); CPU seconds per million
 * records of every process of the run (every thread, from /proc). Each run's output is then
 * audited as bench:compare's: every input record exactly once with its key's running count.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from '@platformatic/kafka';
import { type BrokerAddress, formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { parseEnvironmentConfig } from '../src/core/config/environment-config.ts';
import { startCompareJob, stopWeir, tailOf, type WeirProcess } from './cluster-weir.ts';
import { auditOutput, fillInput, OutputWatcher, PARTITIONS, topicSize, WrittenSampler, waitForTopics } from './compare/kafka-io.ts';

/** The job's maxParallelism (Weir's default: the job sets none). */
const MAX_PARALLELISM = parseEnvironmentConfig({}).maxParallelism;

export type CostRun = 'one process' | 'one member' | 'two members' | 'one member, a task per key group' | 'two members, a task per key group';
/**
 * By default a keyed stage has as many tasks in cluster mode as the input has partitions
 * (cluster.keyedTasks' default, Kafka Streams' sizing of its repartition topics), each holding a
 * range of 32 key groups: 8 tasks for this job. With `--keyed-tasks 128` (maxParallelism: the
 * default before 2026-12-06) one task per key group, each with its own transaction, exchange reads
 * and checkpoint per interval: 132 tasks.
 */
export const COST_RUNS: readonly CostRun[] = [
  'one process',
  'one member',
  'two members',
  'one member, a task per key group',
  'two members, a task per key group',
];

export interface CostFigure {
  run: CostRun;
  /** Records / (start of the processes to the last output record visible). */
  rate: number;
  /**
   * Records/s between 10% and 90% of the output written (its high watermarks, as bench:compare's
   * steady throughput: commits make the output visible in steps, writes are continuous; the
   * transaction markers, one per partition a transaction wrote, count as records there).
   */
  steadyRate: number | undefined;
  /** From the start of the process(es) to the first output record visible (start-up, task assignment, the first checkpoint). */
  firstOutputSeconds: number | undefined;
  /** CPU seconds of every process of the run, per million records. */
  cpuPerMillion: number;
  /** The audit's verdict: "exactly once", or what was wrong. */
  audit: string;
}

export interface CostContext {
  brokers: BrokerAddress[];
  admin: Admin;
  /** Prefix of the topics and cluster ids. */
  name: string;
  log: (line: string) => void;
}

function argsOf(run: CostRun, cluster: string): string[][] {
  const common = ['--checkpoint-interval', '1s'];
  switch (run) {
    case 'one process':
      return [[...common, '--parallelism', '2']];
    case 'one member':
      return [[...common, '--cluster', cluster]];
    case 'two members':
      return [1, 2].map(() => [...common, '--cluster', cluster, '--cluster-threads', '1']);
    case 'one member, a task per key group':
      return [[...common, '--cluster', cluster, '--keyed-tasks', String(MAX_PARALLELISM)]];
    case 'two members, a task per key group':
      return [1, 2].map(() => [...common, '--cluster', cluster, '--cluster-threads', '1', '--keyed-tasks', String(MAX_PARALLELISM)]);
  }
}

async function createTopic(context: CostContext, topic: string): Promise<void> {
  await context.admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(context.brokers, [topic]);
}

/** One run over `records` records of `input` into a new output; `audit` false: only the rate (the priming runs). */
async function costOf(context: CostContext, run: CostRun, input: string, records: number, label: string, audit: boolean): Promise<CostFigure> {
  const output = `${context.name}-${label}-out`;
  await createTopic(context, output);
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-cost-'));
  const watcher = new OutputWatcher(context.brokers, output);
  const bootstrap = formatBootstrap(context.brokers);
  const started = performance.now();
  const startedAt = Date.now();
  const procs: WeirProcess[] = argsOf(run, `${context.name}-${label}`).map((args) => startCompareJob(bootstrap, { input, output }, storage, args));
  const sampler = new WrittenSampler(context.brokers, output);
  try {
    const exited = Promise.race(
      procs.map((proc) =>
        proc.exited.then(() => {
          throw new Error(`${run}: a process exited before the output was complete:\n${tailOf(proc)}`);
        }),
      ),
    );
    exited.catch(() => {});
    await Promise.race([watcher.until(() => watcher.seen >= records, 600_000, `${run}: ${records} records in the output`), exited]);
    const seconds = (performance.now() - started) / 1000;
    const cpu = procs.reduce((sum, proc) => sum + proc.cpu(), 0);
    await sampler.stop();
    const steadyRate = sampler.rateBetween(records * 0.1, records * 0.9);
    await Promise.all(procs.map((proc) => stopWeir(proc)));
    let verdict = 'not audited';
    if (audit) {
      const result = await auditOutput(context.brokers, output, records);
      verdict = result.ok
        ? 'exactly once'
        : `${result.records} records, ${result.duplicates} duplicates, ${result.missing} missing, ${result.wrongCounts} wrong counts, ${result.unknown} unknown`;
    }
    const firstOutputSeconds = watcher.firstVisibleAt === undefined ? undefined : (watcher.firstVisibleAt - startedAt) / 1000;
    return { run, rate: records / seconds, steadyRate, firstOutputSeconds, cpuPerMillion: (cpu / records) * 1e6, audit: verdict };
  } finally {
    await sampler.stop();
    await Promise.all(procs.map((proc) => stopWeir(proc)));
    await watcher.stop();
    await context.admin.deleteTopics({ topics: [output] }).catch(() => {});
    await rm(storage, { recursive: true, force: true });
  }
}

/**
 * The three runs over one pre-filled input of `records` records, after an untimed priming run of
 * one process and of one member (Node's compile cache then holds every module both load, as in any
 * run but the first after a change of the sources).
 */
export async function clusterCost(context: CostContext, records: number): Promise<CostFigure[]> {
  const prime = `${context.name}-prime-in`;
  await createTopic(context, prime);
  await fillInput(context.brokers, prime, 0, 2000);
  for (const run of ['one process', 'one member'] as const) await costOf(context, run, prime, 2000, `prime-${run.replace(' ', '-')}`, false);
  await context.admin.deleteTopics({ topics: [prime] }).catch(() => {});
  const input = `${context.name}-cost-in`;
  await createTopic(context, input);
  const filling = performance.now();
  await fillInput(context.brokers, input, 0, records);
  const size = await topicSize(context.brokers, input);
  if (size !== records) throw new Error(`the input has ${size} records instead of ${records}`);
  context.log(`  input of ${records.toLocaleString('en')} records written in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
  const figures: CostFigure[] = [];
  try {
    for (const run of COST_RUNS) {
      context.log(`  ${run}`);
      const figure = await costOf(context, run, input, records, run.replace(/[^a-z0-9]+/g, '-'), true);
      context.log(
        `  ${run}: ${Math.round(figure.rate)} records/s (steady ${Math.round(figure.steadyRate ?? 0)}, first output after ${figure.firstOutputSeconds?.toFixed(1)} s), ${figure.cpuPerMillion.toFixed(1)} CPU s per million, ${figure.audit}`,
      );
      figures.push(figure);
      await sleep(1000);
    }
  } finally {
    await context.admin.deleteTopics({ topics: [input] }).catch(() => {});
  }
  return figures;
}
