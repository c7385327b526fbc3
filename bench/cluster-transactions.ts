/**
 * bench:cluster's case 2 (issue 35, point 7): transactions per second on the broker against the
 * task count and the checkpoint interval, under steady load and idle.
 *
 * In cluster mode each task commits one Kafka transaction per checkpoint, and that transaction
 * holds exactly one record of the cluster's checkpoint topic (src/cluster/task-checkpoint.ts,
 * commitTaskCheckpoint: the checkpoint record, the input offsets, then EndTxn; cluster-task.ts
 * calls it once per completed checkpoint, and aborts only on stop). So the committed records of the
 * checkpoint topic, read read_committed, are the cluster's committed transactions, one for one;
 * each carries `completedAt`, when its task built it, just before the commit.
 *
 * One member (`--cluster-threads` default) runs the job of bench:compare, unchanged, with
 * `--max-parallelism` setting its key groups and `--keyed-tasks` the same, hence the keyed stage's
 * task count (one task per key group; the source stage has one per input partition, 4). Records come at a steady rate for a
 * while (the steady window); then the input stops, and once every record is readable in the
 * output and the next checkpoints are past, an idle window: issue 35's goal is no transaction at
 * all there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from '@platformatic/kafka';
import { clusterTopicName } from '../src/cluster/stage-plan.ts';
import { type BrokerAddress, formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../src/connectors/kafka/topic-reader.ts';
import { startCompareJob, stopWeir, tailOf } from './cluster-weir.ts';
import { OutputWatcher, PARTITIONS, SteadyProducer, waitForTopics } from './compare/kafka-io.ts';

/** Input records/s of the steady window: well below saturation, so that every task has records every interval. */
export const STEADY_RATE = 5000;
const WARM_UP_MS = 2000;
const STEADY_MS = 6000;
const IDLE_MS = 5000;

export interface TransactionPoint {
  maxParallelism: number;
  intervalMs: number;
}

export interface TransactionFigure extends TransactionPoint {
  /** Tasks that committed at least one checkpoint (source tasks and keyed tasks). */
  tasks: number;
  /** Committed transactions per second in the steady window. */
  steadyPerSecond: number;
  /** Committed transactions in the idle window (the goal: 0). */
  idle: number;
}

/** Tasks with a committed checkpoint (a topic not there yet: none). */
async function committedTasks(brokers: BrokerAddress[], topic: string): Promise<number> {
  const records = await readTopic({ bootstrap: brokers, topic, until: 'last-stable-offset' }).catch(() => []);
  return new Set(records.map((record) => String(record.key))).size;
}

export async function transactionsAt(
  context: { brokers: BrokerAddress[]; admin: Admin; name: string; log: (line: string) => void },
  point: TransactionPoint,
): Promise<TransactionFigure> {
  const label = `tx-${point.maxParallelism}-${point.intervalMs}`;
  const io = { input: `${context.name}-${label}-in`, output: `${context.name}-${label}-out` };
  const cluster = `${context.name}-${label}`;
  await context.admin.createTopics({ topics: [io.input, io.output], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(context.brokers, [io.input, io.output]);
  const storage = await mkdtemp(join(tmpdir(), 'weir-bench-cluster-tx-'));
  const watcher = new OutputWatcher(context.brokers, io.output);
  const startedAt = Date.now();
  const member = startCompareJob(formatBootstrap(context.brokers), io, storage, [
    '--cluster',
    cluster,
    '--checkpoint-interval',
    `${point.intervalMs}ms`,
    '--max-parallelism',
    String(point.maxParallelism),
    '--keyed-tasks',
    String(point.maxParallelism),
  ]);
  const producer = new SteadyProducer(context.brokers, io.input, 0, STEADY_RATE);
  const exited = member.exited.then(() => {
    throw new Error(`the member exited:\n${tailOf(member)}`);
  });
  exited.catch(() => {});
  try {
    await Promise.race([watcher.until(() => watcher.seen >= STEADY_RATE, 300_000, 'the output flowing'), exited]);
    // The steady window starts once every task has committed its first checkpoint (or after 2 min).
    const topic = clusterTopicName(cluster, 'checkpoints');
    const expected = PARTITIONS + point.maxParallelism;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(1000)) {
      if ((await committedTasks(context.brokers, topic)) >= expected) break;
    }
    const flowingAt = Date.now();
    await sleep(WARM_UP_MS);
    const steadyFrom = Date.now();
    await sleep(STEADY_MS);
    const steadyTo = Date.now();
    await producer.stop();
    await Promise.race([watcher.until(() => watcher.seen >= producer.produced, 300_000, 'every record in the output'), exited]);
    // The checkpoints that carried the last records are committed (their output is visible); the
    // next ones, and any a task takes for a change it had not committed yet, within two intervals.
    context.log(
      `  every task committed ${((flowingAt - startedAt) / 1000).toFixed(1)} s after the start; caught up ${((Date.now() - steadyTo) / 1000).toFixed(1)} s after the input stopped`,
    );
    await sleep(2 * point.intervalMs + 1000);
    const idleFrom = Date.now();
    await sleep(IDLE_MS);
    const idleTo = Date.now();
    await sleep(1500); // a commit whose record was built just before idleTo
    const records = await readTopic({ bootstrap: context.brokers, topic, until: 'last-stable-offset' });
    const tasks = new Set<string>();
    let steady = 0;
    let idle = 0;
    for (const record of records) {
      if (record.value === null) continue;
      tasks.add(String(record.key));
      const { completedAt } = JSON.parse(String(record.value)) as { completedAt: number };
      if (completedAt >= steadyFrom && completedAt < steadyTo) steady++;
      if (completedAt >= idleFrom && completedAt < idleTo) idle++;
    }
    return { ...point, tasks: tasks.size, steadyPerSecond: (steady * 1000) / (steadyTo - steadyFrom), idle };
  } finally {
    await producer.stop().catch(() => {});
    await stopWeir(member, true); // the checkpoint topic is read already; the topics are deleted
    await watcher.stop();
    await context.admin.deleteTopics({ topics: [io.input, io.output] }).catch(() => {});
    await rm(storage, { recursive: true, force: true });
  }
}
