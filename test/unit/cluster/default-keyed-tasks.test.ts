import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { defaultKeyedTasks } from '../../../src/cluster/cluster-plan.ts';
import { planStages } from '../../../src/cluster/stage-plan.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

const config = parseEnvironmentConfig({ parallelism: 2, maxParallelism: 128 });

/** input -> keyBy -> sum -> out: one source stage (0), one keyed stage behind a hash exchange. */
function keyedPlan() {
  const env = new StreamExecutionEnvironment();
  env
    .fromSource(kafkaSource<{ key: string; n: number }>({ bootstrap: '127.0.0.1:1', topics: ['in'], deserializer: kafkaDeserializers.json }), { uid: 'input' })
    .keyBy((record) => record.key)
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' })
    .map((record) => record.n, { uid: 'value' })
    .sinkTo(kafkaSink<number>({ bootstrap: '127.0.0.1:1', topic: 'out', serializer: (n) => ({ value: String(n) }), deliveryGuarantee: 'exactly-once' }), {
      uid: 'out',
    });
  return planStages('payments', buildJobGraph('job', env.graph, config));
}

test("a new cluster's keyed stage has as many tasks as its largest source stage (Kafka Streams' repartition topics), not one per key group", async () => {
  const plan = keyedPlan();
  assert.equal(await defaultKeyedTasks(plan, [4], 128), 4);
  assert.equal(await defaultKeyedTasks(plan, [4], 128, async () => undefined), 4, 'no exchange topic yet: a new cluster');
  // At most maxParallelism (a task holds at least one key group).
  assert.equal(await defaultKeyedTasks(plan, [200], 128), 128);
  // No source stage counted: one task per key group, as before.
  assert.equal(await defaultKeyedTasks(plan, [], 128), 128);
});

test('a cluster that ran before keeps the task count its keyed exchange topic was created with', async () => {
  const plan = keyedPlan();
  const exchange = plan.exchanges.find((candidate) => candidate.partitioning === 'hash');
  assert.ok(exchange !== undefined);
  const asked: string[] = [];
  const existing = async (topic: string) => {
    asked.push(topic);
    return topic === exchange.topic ? 128 : undefined;
  };
  assert.equal(await defaultKeyedTasks(plan, [4], 128, existing), 128);
  assert.deepEqual(asked, [exchange.topic]);
});
