/**
 * Cluster mode's task checkpoint against the real broker: output, input offsets (TxnOffsetCommit
 * with the group's generation, KIP-447) and the checkpoint record commit in one transaction. A
 * task moves from member A to member B while A has a transaction open; B fences A
 * (InitProducerId on the task's transactional id), resumes from A's last committed checkpoint and
 * commits its own. The zombie A can then neither write nor commit: with its old producer it is
 * fenced by epoch, and with a fresh producer it is fenced by the group (its generation is gone).
 * Read read_committed, the output holds every input position once, the checkpoint topic names B's
 * checkpoint, and the group's committed offset is B's.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { GroupMembership } from '../../../src/cluster/group-membership.ts';
import { committedOffsets } from '../../../src/cluster/group-offsets.ts';
import { commitTaskCheckpoint, latestTaskCheckpoints, offsetsOf, type TaskCheckpoint, writeTaskOutput } from '../../../src/cluster/task-checkpoint.ts';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { type OffsetsOwner, type OpenTransaction, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const brokers = testBrokers();
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

/** A member of the group with one task; resolves once it owns it. */
async function member(groupId: string): Promise<{ membership: GroupMembership; connections: ClusterConnections; owner: () => OffsetsOwner }> {
  const connections = new ClusterConnections(brokers, { clientId: 'weir-test-task' });
  cleanups.push(() => connections.close());
  const membership = new GroupMembership(connections, {
    groupId,
    taskCount: 1,
    sessionTimeoutMs: 6000,
    rebalanceTimeoutMs: 6000,
    heartbeatIntervalMs: 500,
    onChange: () => {},
  });
  membership.start();
  cleanups.unshift(() => membership.close());
  await until('the member owns the task', async () => (membership.tasks.includes(0) ? true : undefined), 30_000);
  const generationId = membership.generation;
  const memberId = membership.memberId;
  return { membership, connections, owner: () => ({ groupId, generationId, memberId, groupInstanceId: null }) };
}

const records = (topic: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({ topic, partition: 0, value: Buffer.from(JSON.stringify({ seq: from + i })) }));

const checkpoint = (input: string, checkpointId: number, offset: number, owner: OffsetsOwner): TaskCheckpoint => ({
  version: 1,
  stage: 'count',
  task: 0,
  checkpointId,
  offsets: [{ topic: input, partition: 0, offset: String(offset) }],
  state: { location: `s3://bucket/tasks/count-0/chk-${checkpointId}`, operators: [] },
  watermark: null,
  member: { memberId: owner.memberId, generationId: owner.generationId },
  completedAt: Date.now(),
});

const fenced = (error: unknown) => error instanceof WeirError && error.code === 'TASK_FENCED';

test('a task moves while its old owner has a transaction open: the new owner resumes from the last committed checkpoint; the zombie can commit nothing', async () => {
  const [input, output, checkpoints] = await Promise.all(['in', 'out', 'chk'].map((label) => createTestTopic(brokers, `task-${label}`, 1)));
  for (const topic of [input, output, checkpoints]) cleanups.push((topic as { remove: () => Promise<void> }).remove);
  const inputTopic = (input as { topic: string }).topic;
  const outputTopic = (output as { topic: string }).topic;
  const checkpointTopic = (checkpoints as { topic: string }).topic;
  const groupId = `weir-test-task-${randomBytes(4).toString('hex')}`;
  const transactionalId = `${groupId}-count-0`;

  // A owns the task: checkpoint 1 (input read up to 100) commits with its output.
  const a = await member(groupId);
  const driverA = new TransactionDriver(a.connections, { transactionTimeoutMs: 60_000 });
  const first = await driverA.initTransaction(transactionalId);
  await driverA.send(first, records(outputTopic, 0, 100));
  await commitTaskCheckpoint(driverA, a.connections, first, a.owner(), checkpointTopic, checkpoint(inputTopic, 1, 100, a.owner()));
  // A's next transaction is open (records 100..149) when the task moves.
  const open: OpenTransaction = driverA.nextTransaction(first);
  await driverA.send(open, records(outputTopic, 100, 150));
  const zombieOwner = a.owner();
  await a.membership.close();

  // B owns it now, at a newer generation: it fences A, and resumes from checkpoint 1.
  const b = await member(groupId);
  assert.ok(b.owner().generationId > zombieOwner.generationId);
  const driverB = new TransactionDriver(b.connections, { transactionTimeoutMs: 60_000 });
  const resumed = latestTaskCheckpoints(await readTopic({ bootstrap: brokers, topic: checkpointTopic }), checkpointTopic).get('count/0');
  assert.equal(resumed?.checkpointId, 1);
  const from = Number(offsetsOf(resumed as TaskCheckpoint)[0]?.offset);
  assert.equal(from, 100);
  const mine = await driverB.initTransaction(transactionalId); // fences A's producer, aborts its open transaction
  await driverB.send(mine, records(outputTopic, from, 200));
  await commitTaskCheckpoint(driverB, b.connections, mine, b.owner(), checkpointTopic, checkpoint(inputTopic, 2, 200, b.owner()));

  // The zombie wakes. Its old producer is fenced by epoch, whatever it tries.
  await assert.rejects(
    (async () => {
      await writeTaskOutput(driverA, open, records(outputTopic, 150, 160));
      await commitTaskCheckpoint(driverA, a.connections, open, zombieOwner, checkpointTopic, checkpoint(inputTopic, 2, 160, zombieOwner));
    })(),
    fenced,
  );
  // With a fresh producer of its own it is fenced by the group: its generation is gone (KIP-447).
  const fresh = await driverA.initTransaction(`${groupId}-zombie`);
  await driverA.send(fresh, records(outputTopic, 1000, 1010));
  await assert.rejects(commitTaskCheckpoint(driverA, a.connections, fresh, zombieOwner, checkpointTopic, checkpoint(inputTopic, 3, 1010, zombieOwner)), fenced);
  await driverA.abort(fresh);

  // Read back read_committed: every position once, B's checkpoint, B's offset.
  const seqs = (await readTopic({ bootstrap: brokers, topic: outputTopic })).map((record) => (JSON.parse(String(record.value)) as { seq: number }).seq);
  assert.deepEqual(
    seqs,
    Array.from({ length: 200 }, (_, i) => i),
  );
  const latest = latestTaskCheckpoints(await readTopic({ bootstrap: brokers, topic: checkpointTopic }), checkpointTopic).get('count/0');
  assert.equal(latest?.checkpointId, 2);
  assert.equal(latest?.member.memberId, b.owner().memberId);
  assert.deepEqual(await committedOffsets(b.connections, groupId, inputTopic, [0]), [{ topic: inputTopic, partition: 0, offset: 200n }]);
  await b.membership.close();
});
