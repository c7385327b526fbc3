import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDeadLetters } from '../../../src/api/connect-dead-letters.ts';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { clusterTopicName, planStages, resolveForwardExchanges } from '../../../src/cluster/stage-plan.ts';
import { discardingSink } from '../../../src/connectors/discarding-sink.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

const config = parseEnvironmentConfig({ parallelism: 2, maxParallelism: 16 });
const source = (onDeserializationError?: 'skip' | { deadLetter: { topic: string } }) =>
  kafkaSource<{ key: string; n: number }>({
    bootstrap: '127.0.0.1:1',
    topics: ['in'],
    deserializer: kafkaDeserializers.json,
    ...(onDeserializationError === undefined ? {} : { onDeserializationError }),
  });
const sink = () => kafkaSink<number>({ bootstrap: '127.0.0.1:1', topic: 'out', serializer: (n) => ({ value: String(n) }), deliveryGuarantee: 'exactly-once' });

test('a keyed job is two stages: the sources and what runs on them, then the keyed part behind a hash exchange of maxParallelism partitions', () => {
  const env = new StreamExecutionEnvironment();
  env
    .fromSource(source(), { uid: 'input' })
    .map((record) => record, { uid: 'parse' })
    .keyBy((record) => record.key)
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' })
    .map((record) => record.n, { uid: 'value' })
    .sinkTo(sink(), { uid: 'out' });
  const plan = planStages('payments', buildJobGraph('job', env.graph, config));
  assert.deepEqual(
    plan.stages.map((stage) => [stage.uid, stage.vertices, stage.sourceNodes, stage.inputs, stage.taskCount]),
    [
      ['input', [0], [0], [], undefined],
      ['sum', [1], [], [0], 16],
    ],
  );
  assert.equal(plan.exchanges.length, 1);
  const [exchange] = plan.exchanges;
  assert.deepEqual([exchange?.from, exchange?.to, exchange?.partitioning, exchange?.partitions], [0, 1, 'hash', 16]);
  assert.match(exchange?.topic ?? '', /^weir-payments-x-parse-sum-0--h[0-9a-f]{8}$/);
  assert.match(plan.checkpointTopic, /^weir-payments-checkpoints-h[0-9a-f]{8}$/);
  // Names are stable, and never shared by two clusters or two edges.
  assert.equal(planStages('payments', buildJobGraph('job', env.graph, config)).exchanges[0]?.topic, exchange?.topic);
  assert.notEqual(clusterTopicName('a b', 'x'), clusterTopicName('a_b', 'x'));
  assert.notEqual(clusterTopicName('a', 'x', 'b-c'), clusterTopicName('a', 'x-b', 'c'));
});

test('cluster.keyedTasks: a keyed stage of fewer tasks than maxParallelism (each a range of key groups), refused above it by name', () => {
  const env = new StreamExecutionEnvironment();
  const keyed = env.fromSource(source(), { uid: 'input' }).keyBy((record) => record.key);
  keyed
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' })
    .map((record) => record.n, { uid: 'value' })
    .sinkTo(sink(), { uid: 'out' });
  const plan = planStages('payments', buildJobGraph('job', env.graph, config), 4);
  assert.deepEqual(
    plan.stages.map((stage) => [stage.uid, stage.taskCount]),
    [
      ['input', undefined],
      ['sum', 4],
    ],
  );
  assert.deepEqual(
    plan.exchanges.map((exchange) => [exchange.partitioning, exchange.partitions]),
    [['hash', 4]],
  );
  // The setting is checked against maxParallelism by name.
  assert.throws(
    () => parseEnvironmentConfig({ maxParallelism: 16, cluster: { id: 'c1', keyedTasks: 17 } }),
    /cluster\.keyedTasks \(17\) is above maxParallelism \(16\)/,
  );
});

test('a rebalance exchange has the downstream parallelism; forward exchanges take the upstream task count, or rebalance when counts differ', () => {
  const env = new StreamExecutionEnvironment();
  env
    .fromSource(source(), { uid: 'input' })
    .map((record) => record.n, { uid: 'narrow', parallelism: 3 })
    .sinkTo(discardingSink<number>(), { uid: 'out', parallelism: 3 });
  const plan = planStages('c1', buildJobGraph('job', env.graph, config));
  assert.deepEqual(
    plan.exchanges.map((exchange) => [exchange.partitioning, exchange.partitions]),
    [['rebalance', 3]],
  );
  assert.throws(() => planStages('bad id', buildJobGraph('job', env.graph, config)), /--cluster "bad id": a cluster id is 1 to 100 of/);

  // Dead letters of the source joined into the keyed stage's sink: a forward edge across the exchange.
  const joined = new StreamExecutionEnvironment();
  joined
    .fromSource(source({ deadLetter: { topic: 'dlq' } }), { uid: 'input' })
    .keyBy((record) => record.key)
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' })
    .map((record) => record.n)
    .sinkTo(sink(), { uid: 'out' });
  connectDeadLetters(joined.graph);
  const joinedPlan = planStages('c1', buildJobGraph('job', joined.graph, config));
  // The sink has two inputs, so it is a chain of its own: 16 tasks, as the keyed stage before it; with 12
  // source partitions, the dead letters' forward edge rebalances over them (as one process does between parallelisms).
  assert.deepEqual(resolveForwardExchanges(joinedPlan, [12]), [12, 16, 16]);
  assert.deepEqual(
    joinedPlan.exchanges.map((exchange) => [exchange.from, exchange.to, exchange.partitioning, exchange.partitions]),
    [
      [0, 1, 'hash', 16],
      [1, 2, 'forward', 16],
      [0, 2, 'rebalance', 16],
    ],
  );

  // A source feeding two branches (one process chains neither into it): a forward exchange into each, task N to task N.
  const branches = new StreamExecutionEnvironment();
  const input = branches.fromSource(source(), { uid: 'input' });
  input.map((record) => record.n, { uid: 'pass' }).sinkTo(sink(), { uid: 'pass-out' });
  input
    .keyBy((record) => record.key)
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' })
    .map((record) => record.n)
    .sinkTo(sink(), { uid: 'sum-out' });
  const branchPlan = planStages('c1', buildJobGraph('job', branches.graph, config));
  assert.deepEqual(resolveForwardExchanges(branchPlan, [12]), [12, 12, 16]);
  assert.deepEqual(
    branchPlan.exchanges.map((exchange) => [exchange.from, exchange.to, exchange.partitioning, exchange.partitions]),
    [
      [0, 1, 'forward', 12],
      [0, 2, 'hash', 16],
    ],
  );
});
