/** A cluster's own topics on the real broker: created when missing (the checkpoint topic compacted), reused when right, refused by name when their partition count is not the plan's. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { Admin } from '@platformatic/kafka';
import { defineJob } from '../../../src/api/define-job.ts';
import { planCluster } from '../../../src/cluster/cluster-plan.ts';
import { clusterTopics, ensureClusterTopics, existingPartitionCount } from '../../../src/cluster/cluster-topics.ts';
import { clusterTopicName, type StagePlan } from '../../../src/cluster/stage-plan.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { buildStreamGraph } from '../../../src/graph/job.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

const brokers = testBrokers();
const connections = new ClusterConnections(brokers);
const created: string[] = [];
after(async () => {
  const admin = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: [formatBootstrap(brokers)] });
  await admin.deleteTopics({ topics: created }).catch(() => {});
  await admin.close();
  await connections.close();
});

test('the cluster topics: created once with the plan’s partition counts, the checkpoint topic compacted; a wrong count is refused', async () => {
  const cluster = `weir-test-${randomBytes(4).toString('hex')}`;
  const plan: StagePlan = {
    stages: [
      { id: 0, uid: 'input', vertices: [0], sourceNodes: [0], inputs: [], taskCount: undefined },
      { id: 1, uid: 'sum', vertices: [1], sourceNodes: [], inputs: [0], taskCount: 8 },
    ],
    exchanges: [{ edge: 0, from: 0, to: 1, partitioning: 'hash', topic: clusterTopicName(cluster, 'x', 'input', 'sum'), partitions: 8 }],
    checkpointTopic: clusterTopicName(cluster, 'checkpoints'),
  };
  const topics = clusterTopics(plan, 12 + 8);
  created.push(...topics.map((topic) => topic.topic));
  assert.deepEqual(
    await ensureClusterTopics(connections, brokers, {}, topics),
    topics.map((topic) => topic.topic),
  );
  assert.deepEqual(await ensureClusterTopics(connections, brokers, {}, topics), [], 'a second member creates nothing');
  const metadata = await connections.metadata(topics.map((topic) => topic.topic));
  assert.deepEqual(
    topics.map((topic) => metadata.topics.find((entry) => entry.name === topic.topic)?.partitions.length),
    [8, 2],
  );
  const admin = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: [formatBootstrap(brokers)] });
  try {
    const [config] = await admin.describeConfigs({
      resources: [{ resourceType: 2, resourceName: plan.checkpointTopic, configurationKeys: ['cleanup.policy'] }],
    });
    assert.equal(config?.configs.find((entry) => entry.name === 'cleanup.policy')?.value, 'compact');
  } finally {
    await admin.close();
  }
  const other = topics.map((topic) => (topic.compacted ? topic : { ...topic, partitions: 16 }));
  await assert.rejects(ensureClusterTopics(connections, brokers, {}, other), (error: unknown) => {
    assert.ok(error instanceof WeirError && error.code === 'CLUSTER_TASK_COUNT_MISMATCH');
    assert.match(error.message, /the hash exchange into stage "sum", topic "weir-.*", has 8 partitions; the job needs 16/);
    assert.match(error.hint ?? '', /fixed for its life/);
    return true;
  });
});

test("a keyed stage's task count: a new cluster's is its largest source topic's partition count; a cluster that ran before keeps its exchange topic's", async () => {
  const input = await createTestTopic(brokers, 'keyed-count-in', 4);
  try {
    const job = defineJob({
      name: 'keyed-count',
      build(env) {
        env
          .fromSource(kafkaSource<{ key: string }>({ bootstrap: formatBootstrap(brokers), topics: [input.topic], deserializer: kafkaDeserializers.json }), {
            uid: 'input',
          })
          .keyBy((record) => record.key)
          .map((record) => record.key, { uid: 'keyed' })
          .sinkTo(
            kafkaSink<string>({
              bootstrap: formatBootstrap(brokers),
              topic: 'unused',
              serializer: (key) => ({ value: key }),
              deliveryGuarantee: 'exactly-once',
            }),
            {
              uid: 'out',
            },
          );
      },
    });
    const streamGraph = buildStreamGraph(job);
    const loaded = { streamGraph, graph: buildJobGraph(job.name, streamGraph, parseEnvironmentConfig({ maxParallelism: 128 })) };
    const existing = (topic: string) => existingPartitionCount(connections, topic);
    const fresh = await planCluster(loaded, `weir-test-${randomBytes(4).toString('hex')}`, undefined, existing);
    assert.deepEqual(fresh.taskCounts, [4, 4], 'a new cluster: 4 source tasks, 4 keyed tasks (not 128)');
    // A cluster started under the earlier default (one task per key group) goes on with it.
    const ran = `weir-test-${randomBytes(4).toString('hex')}`;
    const before = await planCluster(loaded, ran, 128, existing);
    created.push(...before.topics.map((topic) => topic.topic));
    await ensureClusterTopics(connections, brokers, {}, before.topics);
    const again = await planCluster(loaded, ran, undefined, existing);
    assert.deepEqual(again.taskCounts, [4, 128]);
    assert.deepEqual(await ensureClusterTopics(connections, brokers, {}, again.topics), [], 'its topics are the ones it has');
  } finally {
    await input.remove();
  }
});
