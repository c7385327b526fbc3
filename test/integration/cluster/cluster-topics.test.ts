/** A cluster's own topics on the real broker: created when missing (the checkpoint topic compacted), reused when right, refused by name when their partition count is not the plan's. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { Admin } from '@platformatic/kafka';
import { clusterTopics, ensureClusterTopics } from '../../../src/cluster/cluster-topics.ts';
import { clusterTopicName, type StagePlan } from '../../../src/cluster/stage-plan.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { testBrokers } from '../../harness/kafka.ts';

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
