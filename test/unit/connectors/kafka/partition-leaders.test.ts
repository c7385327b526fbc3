import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MessageRecord } from '@platformatic/kafka';
import type { ClusterConnections } from '../../../../src/connectors/kafka/cluster-connections.ts';
import { PartitionLeaders } from '../../../../src/connectors/kafka/partition-leaders.ts';

/** Topic metadata whose leaders the test moves. */
function cluster(leaders: number[]) {
  const connections = {
    topic: async (_name: string) => ({ partitions: leaders.map((leaderId, partition) => ({ partition, leaderId })) }),
  };
  return connections as unknown as ClusterConnections;
}

const records = (partitions: number[]): MessageRecord[] => partitions.map((partition) => ({ topic: 't', partition, value: Buffer.from('x') }));

test('a produce retried after its leader moved goes to the new leaders, regrouped, never to the old one again', async () => {
  const leaders = [1, 1, 2];
  const partitionLeaders = new PartitionLeaders(cluster(leaders));
  const byLeader = await partitionLeaders.groupByLeader(records([0, 1, 2]));
  assert.deepEqual(
    [...byLeader].map(([leader, group]) => [leader, group.map((record) => record.partition)]),
    [
      [1, [0, 1]],
      [2, [2]],
    ],
  );
  const sent: Array<[number, number[]]> = [];
  const request = partitionLeaders.sendToLeaders(1, byLeader.get(1) as MessageRecord[], async (leader, group) => {
    sent.push([leader, group.map((record) => record.partition as number)]);
  });
  await request();
  assert.deepEqual(sent, [[1, [0, 1]]]);
  // NOT_LEADER_OR_FOLLOWER: partition 1 moved to broker 3; the retry forgets the leaders first.
  leaders[1] = 3;
  partitionLeaders.forget();
  sent.length = 0;
  await request();
  assert.deepEqual(
    sent.sort((a, b) => a[0] - b[0]),
    [
      [1, [0]],
      [3, [1]],
    ],
  );
});
