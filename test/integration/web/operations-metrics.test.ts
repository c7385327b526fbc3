/**
 * The metrics operations need, in /metrics and /api/job: consumer lag per source partition (records
 * and seconds, and a job-wide summary a script can wait on), the exactly-once sink's oldest open
 * transaction against its timeout, the process's own metrics (prom-client's default collectors),
 * and record totals that go on counting across a restart of the attempt.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

const folders: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

interface JobView {
  state: string;
  lag: { records: number; seconds: number; partitions: number };
  vertices: { name: string; recordsIn: number; totalRecordsIn: number; operators: Record<string, number> }[];
}

test('consumer lag per partition and overall, the open transaction age against its timeout, and the process metrics', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'metrics-in', 2);
  const output = await createTestTopic(brokers, 'metrics-out', 2);
  cleanups.push(input.remove, output.remove);
  await writeChaosInput(brokers, input.topic, 2, 6000);
  const folder = await mkdtemp(join(tmpdir(), 'weir-metrics-'));
  folders.push(folder);
  const run = startWeirRun(
    [
      join(repositoryRoot, 'test', 'fixtures', 'jobs', 'kafka-count-job.ts'),
      '--checkpoint-interval',
      '500ms',
      '--checkpoint-storage',
      join(folder, 'chk'),
      '--ui-port',
      '0',
    ],
    { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '500', KC_UNBOUNDED: '1' },
  );
  try {
    const url = await run.url();
    const view = async () => (await (await fetch(`${url}/api/job`)).json()) as JobView;
    // While it works through its input: lag in records and seconds, per partition and overall.
    const behind = await until('the job reports lag', async () => {
      const job = await view();
      return job.lag.partitions === 2 && job.lag.records > 0 ? job : undefined;
    });
    const source = behind.vertices.find((vertex) => Object.keys(vertex.operators).some((name) => name.includes('.lag/')));
    const partitions = Object.keys(source?.operators ?? {}).filter((name) => /\.lag\/.+\/\d+\/records$/.test(name));
    assert.equal(partitions.length, 2, JSON.stringify(source?.operators));
    // Every vertex has reported (the sink's transactions among them).
    const metrics = await until('every vertex in /metrics', async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return /^weir_sink_transaction_timeout_seconds\{/m.test(text) ? text : undefined;
    });
    assert.match(metrics, new RegExp(`^weir_source_lag_records\\{job="kafka-count",operator="[^"]+",topic="${input.topic}",partition="[01]"\\} \\d+$`, 'm'));
    assert.match(
      metrics,
      new RegExp(`^weir_source_lag_seconds\\{job="kafka-count",operator="[^"]+",topic="${input.topic}",partition="[01]"\\} [\\d.e+-]+$`, 'm'),
    );
    assert.match(metrics, /^weir_sink_transaction_timeout_seconds\{job="kafka-count",sink="[^"]+",subtask="\d+"\} 900$/m);
    assert.match(metrics, /^weir_sink_transaction_oldest_age_seconds\{job="kafka-count",sink="[^"]+",subtask="\d+"\} [\d.]+$/m);
    for (const name of ['process_cpu_seconds_total', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      assert.match(metrics, new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'), `${name} in /metrics`);
    }
    assert.match(metrics, /^# TYPE nodejs_gc_duration_seconds histogram$/m, 'GC durations (samples once a collection ran)');
    // Caught up: a script waits for lag 0.
    const caughtUp = await until('the job catches up', async () => {
      const job = await view();
      return job.lag.records === 0 && job.lag.partitions === 2 ? job : undefined;
    });
    assert.equal(caughtUp.lag.seconds, 0);
  } finally {
    run.child.kill('SIGTERM');
    await run.exited;
  }
});

test('record totals go on counting across a restart of the attempt, in /api/job and as Prometheus counters', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-totals-'));
  folders.push(folder);
  const run = startWeirRun(
    [
      join(repositoryRoot, 'test', 'fixtures', 'jobs', 'keyed-sum-job.ts'),
      '--checkpoint-interval',
      '100ms',
      '--checkpoint-storage',
      join(folder, 'chk'),
      '--restart-delay',
      '100ms',
      '--ui-port',
      '0',
    ],
    { KS_OUTPUT: join(folder, 'out'), KS_COUNT: '100000000', KS_RATE: '4000', KS_FAIL_MARKER: join(folder, 'failed-once'), KS_FAIL_AFTER: '6000' },
  );
  try {
    const url = await run.url();
    const job = await until('the job restarted once and counts again', async () => {
      const view = (await (await fetch(`${url}/api/job`)).json()) as JobView & { restarts: unknown[] };
      const first = view.vertices[0];
      // (The failed attempt's counts are those it last reported, once a second.)
      return view.restarts.length === 1 && first !== undefined && first.recordsIn > 0 && first.totalRecordsIn > first.recordsIn + 1000 ? view : undefined;
    });
    const first = job.vertices[0] as JobView['vertices'][number];
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const counted = Number(
      new RegExp(`^weir_vertex_records_in_total\\{job="keyed-sum",vertex="${first.name.replace(/[()]/g, '\\$&')}"\\} (\\d+)$`, 'm').exec(metrics)?.[1],
    );
    assert.ok(
      counted >= first.totalRecordsIn - 1 && counted > first.recordsIn,
      `${counted} counted, ${first.totalRecordsIn} total, ${first.recordsIn} this attempt:\n${metrics}`,
    );
  } finally {
    run.child.kill('SIGTERM');
    await run.exited;
  }
});
