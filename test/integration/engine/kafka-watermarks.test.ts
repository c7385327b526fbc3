/**
 * The Kafka source makes watermarks per partition, on Kafka's record timestamps: a partition 5 s
 * behind another is not late, and once it goes quiet the idleness timeout lets the busy partition's
 * windows fire. Against the real broker the global setup provides (fails, never skips, without one).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Producer, stringSerializers } from '@platformatic/kafka';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import type { PartitionRecord, PartitionWindow } from '../../fixtures/jobs/kafka-windows-job.ts';
import { bootstrapList, createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { readCommitted } from './window-output.ts';

const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('kafka source: per-partition watermarks on record timestamps; an idle partition does not stall the windows of the other', async () => {
  const brokers = testBrokers();
  const { topic, remove } = await createTestTopic(brokers, 'partition-watermarks', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-kafka-wm-'));
  folders.push(folder);
  const producer = new Producer({ clientId: 'weir-test-watermarks', bootstrapBrokers: bootstrapList(brokers), serializers: stringSerializers });
  const start = Math.floor(Date.now() / 1000) * 1000;
  const send = (p: number, i: number, timestamp: number) =>
    producer.send({
      messages: [{ topic, partition: p, key: String(p), value: JSON.stringify({ p, i } satisfies PartitionRecord), timestamp: BigInt(timestamp) }],
    });
  try {
    process.env.KW_TOPIC = topic;
    process.env.KW_OUTPUT = join(folder, 'out');
    process.env.KW_IDLENESS = '500';
    const client = await startJob({
      job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-windows-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') } },
    });
    // Both partitions get a record every 100 ms of event time, written side by side, partition 1's
    // 5 s behind partition 0's (a single watermark for the source would make them all late). After
    // 80 records partition 1 goes quiet for good; partition 0 goes on until windows far past
    // partition 1's end have fired (only idleness lets them).
    while (client.status().latestCheckpointId === undefined) await sleep(50); // the job runs: its reader sees records as they come
    let i = 0;
    let windows: PartitionWindow[] = [];
    while (!windows.some((window) => window.p === 0 && window.start >= start + 11_000)) {
      for (let n = 0; n < 10; n++, i++) {
        await send(0, i, start + i * 100);
        if (i < 80) await send(1, i, start - 5000 + i * 100);
      }
      await sleep(50);
      windows = readCommitted<PartitionWindow>(join(folder, 'out', 'windows'));
    }
    await client.stopWithSavepoint();
    await client.result;
    windows = readCommitted<PartitionWindow>(join(folder, 'out', 'windows'));
    const late = readCommitted<PartitionRecord>(join(folder, 'out', 'late'));
    assert.deepEqual(late, [], 'no record late: partition 1 is 5 s behind, but each partition has its own watermark');
    const ofPartition = (p: number) => windows.filter((window) => window.p === p).sort((a, b) => a.start - b.start);
    assert.deepEqual(
      ofPartition(1).map((window) => [window.start - start, window.count]),
      [-5000, -4000, -3000, -2000, -1000, 0, 1000, 2000].map((offset) => [offset, 10]),
      'every window of the quiet partition fired, complete',
    );
    for (const window of ofPartition(0)) assert.equal(window.count, 10, `partition 0's window at ${window.start - start} is complete`);
    assert.ok(ofPartition(0).length >= 12, `partition 0's windows fired past the quiet one's end (${ofPartition(0).length})`);
  } finally {
    await producer.close();
    await remove();
  }
});

test('stop with drain after the input went idle: the end of event time still fires every window', async () => {
  const brokers = testBrokers();
  const { topic, remove } = await createTestTopic(brokers, 'drain-idle', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-kafka-drain-'));
  folders.push(folder);
  const producer = new Producer({ clientId: 'weir-test-drain', bootstrapBrokers: bootstrapList(brokers), serializers: stringSerializers });
  const start = Math.floor(Date.now() / 1000) * 1000;
  try {
    process.env.KW_TOPIC = topic;
    process.env.KW_OUTPUT = join(folder, 'out');
    process.env.KW_IDLENESS = '300';
    const client = await startJob({
      job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-windows-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') } },
    });
    // Three seconds of event time per partition, then nothing: the source and every task downstream go idle.
    for (let i = 0; i < 30; i++) {
      for (const p of [0, 1]) {
        await producer.send({
          messages: [{ topic, partition: p, key: String(p), value: JSON.stringify({ p, i } satisfies PartitionRecord), timestamp: BigInt(start + i * 100) }],
        });
      }
    }
    const firstWindows = async () => {
      for (let waited = 0; waited < 30_000; waited += 100) {
        if (readCommitted<PartitionWindow>(join(folder, 'out', 'windows')).length >= 4) return;
        await sleep(100);
      }
      throw new Error('the first windows did not fire');
    };
    await firstWindows(); // windows up to 2 s fired; the last one (the watermark is 500 ms behind) waits
    await sleep(1500); // well past the idleness timeout
    assert.equal(readCommitted<PartitionWindow>(join(folder, 'out', 'windows')).length, 4, 'the last window of each partition waits for the watermark');
    await client.stopWithSavepoint({ drain: true });
    await client.result;
    const windows = readCommitted<PartitionWindow>(join(folder, 'out', 'windows'))
      .map((window) => [window.p, window.start - start, window.count])
      .sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
    assert.deepEqual(
      windows,
      [
        [0, 0, 10],
        [0, 1000, 10],
        [0, 2000, 10],
        [1, 0, 10],
        [1, 1000, 10],
        [1, 2000, 10],
      ],
      'every window fired once, complete, the last ones by the drain',
    );
  } finally {
    await producer.close();
    await remove();
  }
});
