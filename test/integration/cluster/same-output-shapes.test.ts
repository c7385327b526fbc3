/**
 * Issue 35, point 1, for the job shapes the examples do not have: each job runs through one
 * process (`weir run`) and through three cluster members (`weir run --cluster`) at once, on the
 * same deterministic input, each until its output is complete; both outputs are read back
 * read_committed and compared, per key in order where the job defines the order, as multisets
 * otherwise, and each against what the input says it must be.
 *
 * - test/fixtures/jobs/shapes-branches-job.ts: dead letters of an operator before a keyBy joined
 *   into the transactions of a sink behind it; a side output; one operator fanned out into a
 *   KeyedProcessFunction (event-time timers, and a processing-time timer whose effect is one
 *   record per key, whenever it fires), event-time windows and a filter; a union of the side
 *   output with the filter's branch.
 * - test/fixtures/jobs/shapes-joins-job.ts: broadcast state, async I/O (unordered), an interval
 *   join, a window join and a window coGroup, a keyed co-process function with event-time timers,
 *   a keyed reduce, a rebalanced flatMap and a broadcast process function not keyed, all unioned
 *   into one sink; its keyed stages have fewer tasks than key groups (`--keyed-tasks`: each task a
 *   range of key groups, as a subtask in one process).
 *
 * Every event-time result is determined by the input (at most 800 ms out of order per partition
 * against 2 s allowed; a closing record an hour ahead in every partition fires every window).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { expectedBranches, partitionOf, SHAPE_PARTITIONS, shapeInput } from '../../fixtures/jobs/shapes-branches-job.ts';
import { expectedJoins, shapeRules } from '../../fixtures/jobs/shapes-joins-job.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import {
  assertSameOutput,
  countOf,
  type InputRecord,
  outputComplete,
  produceJson,
  readByKey,
  shortfall,
  startBoth,
  withLogs,
} from '../../harness/same-output.ts';

const jobs = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');
/**
 * Keyed stages of one task per key group (`--keyed-tasks` = maxParallelism), one more than the
 * input's partitions: the dead letters of the source's stage (3 tasks) reach the keyed stage's sink
 * (4 tasks) through a rebalance.
 */
const ARGS = ['--max-parallelism', String(SHAPE_PARTITIONS + 1)];
const CLUSTER_ARGS = ['--keyed-tasks', String(SHAPE_PARTITIONS + 1)];
const EVENTS = 1600;

async function topics(brokers: BrokerAddress[], specs: [string, number][]) {
  const created = await Promise.all(specs.map(([label, partitions]) => createTestTopic(brokers, label, partitions)));
  return { names: created.map((topic) => topic.topic), remove: () => Promise.all(created.map((topic) => topic.remove().catch(() => {}))) };
}

const eventRecords = (input: ReturnType<typeof shapeInput>): InputRecord[] =>
  input.map((event) => ({ partition: partitionOf(event.account), key: event.account, value: event }));

/** A topic's committed values, whatever their key (dead letters of an operator have none). */
const values = async (brokers: BrokerAddress[], topic: string) =>
  (await readTopic({ bootstrap: [...brokers], topic, until: 'last-stable-offset' })).map((record) => String(record.value)).sort();

/** What a member printed of its plan names each shape as expected (a stage, its exchange and partition count). */
function assertPlan(stderr: string, lines: RegExp[]): void {
  for (const line of lines) assert.match(stderr, line);
}

const only = (byKey: Map<string, string[]>, kind: string) => new Map([...byKey].filter(([key]) => key.startsWith(`${kind}|`)));

describe('job shapes through one process and through three cluster members (issue 35)', { concurrency: 2 }, () => {
  test('side output, fan-out, union, timers (event and processing time), windows, dead letters joined across a keyBy', async () => {
    const brokers = testBrokers();
    const created = await topics(brokers, [
      ['shapes-events', SHAPE_PARTITIONS],
      ['shapes-one-out', 3],
      ['shapes-one-dlq', 1],
      ['shapes-cluster-out', 3],
      ['shapes-cluster-dlq', 1],
    ]);
    const [events, oneOut, oneDlq, clusterOut, clusterDlq] = created.names as [string, string, string, string, string];
    try {
      const input = shapeInput(EVENTS);
      await produceJson(brokers, events, eventRecords(input));
      const expected = expectedBranches(input);
      const total = countOf(expected.output) + expected.deadLetters.length;
      const both = await startBoth({
        module: join(jobs, 'shapes-branches-job.ts'),
        brokers: { oneProcess: brokers, cluster: brokers },
        oneProcessEnv: { SH_EVENTS: events, SH_OUTPUT: oneOut, SH_DLQ: oneDlq },
        clusterEnv: { SH_EVENTS: events, SH_OUTPUT: clusterOut, SH_DLQ: clusterDlq },
        args: ARGS,
        clusterArgs: CLUSTER_ARGS,
        label: 'shapes-branches',
      });
      try {
        await withLogs(both, async () => {
          const complete = async (output: string, dlq: string) => countOf(await readByKey(brokers, output)) + (await values(brokers, dlq)).length;
          const short = async (output: string, dlq: string) =>
            `${await shortfall(expected.output, () => readByKey(brokers, output))} ${await shortfall(new Map([['dead letters', expected.deadLetters]]), async () => new Map([['dead letters', await values(brokers, dlq)]]))}`;
          await Promise.all([
            both.watch(
              [both.oneProcess],
              'one process',
              outputComplete(
                'one process: every output',
                () => complete(oneOut, oneDlq),
                total,
                both.signal,
                undefined,
                () => short(oneOut, oneDlq),
              ),
            ),
            both.watch(
              both.members,
              'cluster',
              outputComplete(
                'cluster: every output',
                () => complete(clusterOut, clusterDlq),
                total,
                both.signal,
                undefined,
                () => short(clusterOut, clusterDlq),
              ),
            ),
          ]);
          // The shapes this test is for: the dead letters of the source's stage (3 tasks) rebalanced into the keyed stage's sink (4).
          assertPlan(both.members[0]?.stderr() ?? '', [/the rebalance exchange into stage "balances-out": topic \S+dead-letters\S+, 4 partitions/]);
          const [one, cluster] = await Promise.all([readByKey(brokers, oneOut), readByKey(brokers, clusterOut)]);
          for (const [kind, ordered] of [
            ['bal', true],
            ['tick', true],
            ['seen', true],
            ['win', false],
            ['flag', false],
          ] as const) {
            assert.ok(countOf(only(expected.output, kind)) > 0, `the input makes some ${kind} records`);
            assertSameOutput(kind, only(one, kind), only(cluster, kind), ordered);
            assertSameOutput(`${kind} against the input`, only(expected.output, kind), only(one, kind), ordered);
          }
          assert.equal(countOf(one), countOf(expected.output), 'nothing else in the output');
          const [oneDead, clusterDead] = await Promise.all([values(brokers, oneDlq), values(brokers, clusterDlq)]);
          assert.deepEqual(clusterDead, oneDead, 'the same dead letters');
          assert.deepEqual(oneDead, [...expected.deadLetters].sort(), 'the dead letters of the input');
        });
      } finally {
        await both.stop();
      }
    } finally {
      await created.remove();
    }
  });

  test('broadcast state, async I/O, interval and window joins, a coGroup, a keyed co-process, a reduce, a rebalanced flatMap, broadcast not keyed, unioned into one sink', async () => {
    const brokers = testBrokers();
    const created = await topics(brokers, [
      ['shapes-join-events', SHAPE_PARTITIONS],
      ['shapes-rules', 1],
      ['shapes-join-one-out', 3],
      ['shapes-join-cluster-out', 3],
    ]);
    const [events, rules, oneOut, clusterOut] = created.names as [string, string, string, string];
    try {
      const input = shapeInput(EVENTS);
      await produceJson(brokers, events, eventRecords(input));
      await produceJson(
        brokers,
        rules,
        shapeRules().map((rule) => ({ partition: 0, key: String(rule.id), value: rule })),
      );
      const expected = expectedJoins(input);
      const both = await startBoth({
        module: join(jobs, 'shapes-joins-job.ts'),
        brokers: { oneProcess: brokers, cluster: brokers },
        oneProcessEnv: { SH_EVENTS: events, SH_RULES: rules, SH_OUTPUT: oneOut },
        clusterEnv: { SH_EVENTS: events, SH_RULES: rules, SH_OUTPUT: clusterOut },
        // Keyed stages of 4 tasks over 16 key groups (cluster.keyedTasks): each task a range of 4.
        args: ['--max-parallelism', '16'],
        clusterArgs: ['--keyed-tasks', String(SHAPE_PARTITIONS + 1)],
        label: 'shapes-joins',
      });
      try {
        await withLogs(both, async () => {
          const complete = async (output: string) => countOf(await readByKey(brokers, output));
          await Promise.all([
            both.watch(
              [both.oneProcess],
              'one process',
              outputComplete(
                'one process: every output',
                () => complete(oneOut),
                countOf(expected),
                both.signal,
                undefined,
                () => shortfall(expected, () => readByKey(brokers, oneOut)),
              ),
            ),
            both.watch(
              both.members,
              'cluster',
              outputComplete(
                'cluster: every output',
                () => complete(clusterOut),
                countOf(expected),
                both.signal,
                undefined,
                () => shortfall(expected, () => readByKey(brokers, clusterOut)),
              ),
            ),
          ]);
          // Broadcast state beside the keyed input: the rules reach each of the keyed stage's 4 tasks; not keyed, the stage's 1.
          assertPlan(both.members[0]?.stderr() ?? '', [
            /the broadcast exchange into stage "apply-rules": topic \S+, 4 partitions/,
            /the broadcast exchange into stage "tag": topic \S+, 1 partitions?/,
          ]);
          const [one, cluster] = await Promise.all([readByKey(brokers, oneOut), readByKey(brokers, clusterOut)]);
          for (const [kind, ordered] of [
            ['ruled', false],
            ['async', false],
            ['ij', false],
            ['wj', false],
            ['cg', false],
            ['co', false],
            ['max', true],
            ['fm', false],
            ['bp', false],
          ] as const) {
            assert.ok(countOf(only(expected, kind)) > 0, `the input makes some ${kind} records`);
            assertSameOutput(kind, only(one, kind), only(cluster, kind), ordered);
            assertSameOutput(`${kind} against the input`, only(expected, kind), only(one, kind), ordered);
          }
          assert.equal(countOf(one), countOf(expected), 'nothing else in the output');
        });
      } finally {
        await both.stop();
      }
    } finally {
      await created.remove();
    }
  });
});
