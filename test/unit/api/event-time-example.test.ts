/** The example of docs/event-time.md (per-account totals per minute of event time, from Kafka) type-checks and builds into the expected job graph. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';
import {
  type Collector,
  defineJob,
  kafkaDeserializers,
  kafkaSink,
  kafkaSource,
  OutputTag,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from '../../../src/index.ts';

interface Payment {
  account: string;
  amount: number;
  ts: number;
}

interface MinuteTotal {
  account: string;
  minute: number;
  total: number;
}

// As in docs/event-time.md.
const job = defineJob({
  name: 'per-minute-totals',
  config: { parallelism: 2, checkpointing: { interval: '1s', storage: '.weir/per-minute/checkpoints' } },
  build(env) {
    const late = new OutputTag<Payment>('late-payments');
    const totals = env
      .fromSource(kafkaSource<Payment>({ topics: ['payments'], deserializer: kafkaDeserializers.json }), {
        uid: 'payments',
        watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<Payment>('5s')
          .withTimestampAssigner((payment) => payment.ts)
          .withIdleness('1m'),
      })
      .keyBy((payment) => payment.account)
      .window(TumblingEventTimeWindows.of('1m'))
      .allowedLateness('30s')
      .sideOutputLateData(late)
      .aggregate(
        { createAccumulator: () => 0, add: (payment, total) => total + payment.amount, getResult: (total) => total, merge: (a, b) => a + b },
        {
          process(account, context, [total], out: Collector<MinuteTotal>) {
            out.collect({ account, minute: context.window.start, total: total ?? 0 });
          },
        },
        { uid: 'per-minute-totals' },
      );
    const toKafka = <T extends { account: string }>(topic: string) =>
      kafkaSink<T>({ topic, serializer: (record) => ({ key: record.account, value: JSON.stringify(record) }), deliveryGuarantee: 'exactly-once' });
    totals.sinkTo(toKafka<MinuteTotal>('minute-totals'), { uid: 'totals-out' });
    totals.getSideOutput(late).sinkTo(toKafka<Payment>('late-payments'), { uid: 'late-out' });
  },
});

test("the event-time guide's example builds: source, window with its late side output, two sinks", () => {
  const env = new StreamExecutionEnvironment();
  job.build(env);
  const graph = buildJobGraph(job.name, env.graph, parseEnvironmentConfig(job.config));
  assert.deepEqual(
    graph.vertices.map((vertex) => [vertex.name, vertex.keyed]),
    [
      ['kafka source (payments)', false],
      ['aggregate', true],
      ['kafka sink (minute-totals)', false],
      ['kafka sink (late-payments)', false],
    ],
  );
  assert.deepEqual(
    graph.edges.map((edge) => [edge.partitioning, edge.outputTag]),
    [
      ['hash', undefined],
      ['forward', undefined],
      ['forward', 'late-payments'],
    ],
  );
});
