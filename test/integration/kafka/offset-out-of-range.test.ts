/**
 * An out-of-range offset (retention or DeleteRecords passed the checkpointed offset while the job
 * was down) against a real broker: the job runs, checkpoints offset 100 and is cancelled; 100 more
 * records come and DeleteRecords moves the log start to 150; then the job is started again from
 * its checkpoint. 'fail' (the default) fails naming the partition, the offset and the lost range;
 * 'earliest' goes on from 150 with the 50 records lost counted; 'latest' reads only what comes next.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Admin } from '@platformatic/kafka';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { type JobClient, startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { bootstrapList, createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const brokers = testBrokers();
const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'offset-reset-job.ts');
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

async function produce(topic: string, from: number, to: number): Promise<void> {
  const connections = new ClusterConnections(brokers);
  try {
    const producer = new PlainProducer(connections);
    await producer.send(
      Array.from({ length: to - from }, (_, i) => ({ topic, partition: 0, value: Buffer.from(`v-${from + i}`) })),
      -1,
    );
  } finally {
    await connections.close();
  }
}

function committedLines(folder: string): string[] {
  let names: string[];
  try {
    names = readdirSync(folder).filter((name) => name.startsWith('part-'));
  } catch {
    return [];
  }
  return names.flatMap((name) =>
    readFileSync(join(folder, name), 'utf8')
      .split('\n')
      .filter((line) => line.length > 0),
  );
}

/** A topic with records 0..99 read and checkpointed by a first run, then 100..199 and the log start moved to 150. */
async function lostRange(label: string): Promise<{ topic: string; folder: string; storage: string }> {
  const { topic, remove } = await createTestTopic(brokers, label);
  const folder = await mkdtemp(join(tmpdir(), 'weir-offset-range-'));
  cleanups.push(remove, () => rm(folder, { recursive: true, force: true }));
  const storage = join(folder, 'checkpoints');
  await produce(topic, 0, 100);
  process.env.OR_INPUT = topic;
  process.env.OR_OUTPUT = join(folder, 'out');
  delete process.env.OR_POLICY;
  const first = await startJob({ job, config: { checkpointing: { interval: 100, storage } } });
  await until('the first run commits 100 records', async () => (committedLines(join(folder, 'out')).length === 100 ? true : undefined));
  await first.cancel();
  await produce(topic, 100, 200);
  const admin = new Admin({ clientId: 'weir-test-admin', bootstrapBrokers: bootstrapList(brokers) });
  try {
    await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 150n }] }] });
  } finally {
    await admin.close();
  }
  return { topic, folder, storage };
}

const lostMetric = (client: JobClient) =>
  client
    .status()
    .vertices.flatMap((vertex) => Object.entries(vertex.operators))
    .find(([name]) => name === 'input.recordsLostOutOfRange')?.[1];

test("onOffsetOutOfRange 'fail' (the default): the restart fails at once, naming the partition, the offset and the lost range", async () => {
  const { topic, storage } = await lostRange('oor-fail');
  const second = await startJob({ job, config: { checkpointing: { interval: 100, storage } } });
  await assert.rejects(second.result, (error: Error & { code?: string; hint?: string }) => {
    assert.equal(error.code, 'OFFSET_OUT_OF_RANGE', error.message);
    assert.ok(error.message.includes(`offset 100 of ${topic}/0 is out of range (the partition holds offsets 150 to 199)`), error.message);
    assert.ok(error.message.includes('records 100 to 149 (50) were deleted'), error.message);
    assert.match(error.hint ?? '', /onOffsetOutOfRange/);
    return true;
  });
  // With the default restart strategy: no restart, each would meet the same lost range.
  assert.equal(second.status().restarts.length, 0);
});

test("onOffsetOutOfRange 'earliest': the restart goes on from the log start and counts the 50 records lost", async () => {
  const { storage, folder } = await lostRange('oor-earliest');
  process.env.OR_POLICY = 'earliest';
  const second = await startJob({ job, config: { checkpointing: { interval: 100, storage } } });
  try {
    await until('the second run commits records 150..199', async () => (committedLines(join(folder, 'out')).length === 150 ? true : undefined));
    assert.deepEqual(
      committedLines(join(folder, 'out')).sort(),
      [...Array.from({ length: 100 }, (_, i) => `v-${i}`), ...Array.from({ length: 50 }, (_, i) => `v-${150 + i}`)].sort(),
    );
    assert.equal(await until('the metric reports', async () => lostMetric(second)), 50);
  } finally {
    await second.cancel();
  }
});

test("onOffsetOutOfRange 'latest': the restart reads only new records and counts every record skipped", async () => {
  const { topic, storage, folder } = await lostRange('oor-latest');
  process.env.OR_POLICY = 'latest';
  const second = await startJob({ job, config: { checkpointing: { interval: 100, storage } } });
  try {
    assert.equal(await until('the metric reports', async () => lostMetric(second)), 100); // 100..199: 50 deleted, 50 skipped
    await produce(topic, 200, 210);
    await until('the second run commits records 200..209', async () => (committedLines(join(folder, 'out')).length === 110 ? true : undefined));
  } finally {
    await second.cancel();
  }
});
