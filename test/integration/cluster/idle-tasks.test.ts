/**
 * Issue 35, point 5: every cluster task committed a transaction (its checkpoint record, with
 * watermark frames into the exchanges) every interval whether or not anything changed: a keyed
 * stage has maxParallelism tasks, so an idle job committed that many transactions per interval.
 * Here the job reads its input, catches up, and then stands idle: the checkpoint topic must not
 * grow. New input afterwards is processed and checkpointed again, and the outputs audit exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterTopicName } from '../../../src/cluster/stage-plan.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, totalsAtLeast, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';
import { testBrokers } from '../../harness/kafka.ts';

test('an idle cluster job commits no transactions; input that comes later is checkpointed again', { timeout: 300_000 }, async () => {
  const { cluster, topics, members, member } = await clusterTest('idle');
  const checkpointTopic = clusterTopicName(cluster, 'checkpoints');
  const checkpointRecords = async () => (await readTopic({ bootstrap: testBrokers(), topic: checkpointTopic })).length;
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 1000 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    const run = member({ interval: '300ms' });
    await run.waitFor(/generation \d+, \d+ tasks/, 120_000);
    await totalsAtLeast(topics, first.length);
    await sleep(2000); // every task checkpoints past the input (its watermark frames included)
    const before = await checkpointRecords();
    await sleep(3000); // ten intervals with nothing to do
    const idle = (await checkpointRecords()) - before;
    assert.equal(idle, 0, `the idle job committed ${idle} checkpoint records in 3 s (tasks x intervals)`);

    const later = Array.from({ length: 500 }, (_, seq) => payment(first.length + seq));
    const last = closers(first.length + later.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + (first.length + later.length) * 5 + 5000);
    await producePayments(topics.input, [...later, ...last]);
    await auditClusterOutputs(topics, [...first, ...later, ...last], [...first, ...later]);
    assert.ok((await checkpointRecords()) > before, 'the new input was checkpointed');
  });
});
