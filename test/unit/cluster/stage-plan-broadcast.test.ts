import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { planStages, resolveForwardExchanges } from '../../../src/cluster/stage-plan.ts';
import { discardingSink } from '../../../src/connectors/discarding-sink.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { mapState } from '../../../src/core/state/state-descriptors.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

const config = parseEnvironmentConfig({ parallelism: 2, maxParallelism: 16 });
const source = <T>(topic: string) => kafkaSource<T>({ bootstrap: '127.0.0.1:1', topics: [topic], deserializer: kafkaDeserializers.json });
const rules = mapState<number, number>('rules');

const edges = (plan: ReturnType<typeof planStages>) =>
  plan.exchanges.map((exchange) => [exchange.from, exchange.to, exchange.partitioning, exchange.partitions]);

test('broadcast state beside a keyed input: the broadcast exchange has a partition per key group, as the keyed stage has a task per key group', () => {
  const env = new StreamExecutionEnvironment();
  const ruleStream = env.fromSource(source<{ id: number; factor: number }>('rules'), { uid: 'rules', parallelism: 1 });
  env
    .fromSource(source<{ key: string; n: number }>('in'), { uid: 'input' })
    .keyBy((record) => record.key)
    .connect(ruleStream.broadcast(rules))
    .process<number>({ processElement: (record, _context, out) => out.collect(record.n), processBroadcastElement: () => {} }, { uid: 'apply' })
    .sinkTo(discardingSink(), { uid: 'out' });
  const plan = planStages('c1', buildJobGraph('job', env.graph, config));
  // It was refused before: "stage "apply" reads exchanges of different partition counts (16, 2)".
  assert.deepEqual(resolveForwardExchanges(plan, [1, 12]), [1, 12, 16]);
  assert.deepEqual(edges(plan), [
    [1, 2, 'hash', 16],
    [0, 2, 'broadcast', 16],
  ]);
});

test('broadcast state beside a forward input (not keyed): the stage keeps the vertex parallelism, the forward input rebalances into it, as before', () => {
  const env = new StreamExecutionEnvironment();
  const ruleStream = env.fromSource(source<{ id: number; factor: number }>('rules'), { uid: 'rules', parallelism: 1 });
  const input = env.fromSource(source<{ key: string; n: number }>('in'), { uid: 'input' });
  input.map((record) => record.n, { uid: 'pass' }).sinkTo(discardingSink(), { uid: 'pass-out' });
  input
    .connect(ruleStream.broadcast(rules))
    .process<number>({ processElement: (record, _context, out) => out.collect(record.n), processBroadcastElement: () => {} }, { uid: 'apply' })
    .sinkTo(discardingSink(), { uid: 'out' });
  const plan = planStages('c1', buildJobGraph('job', env.graph, config));
  const counts = resolveForwardExchanges(plan, [1, 12]);
  const apply = plan.stages.find((stage) => stage.uid === 'apply') as { id: number };
  // A plan that ran before this change keeps its topics' partition counts (a member refuses another count).
  assert.equal(counts[apply.id], 2);
  assert.deepEqual(
    plan.exchanges
      .filter((entry) => entry.to === apply.id)
      .map((exchange) => [exchange.partitioning, exchange.partitions])
      .sort(),
    [
      ['broadcast', 2],
      ['rebalance', 2],
    ],
  );
});
