/** The Kafka sink routes records by topic, key, partitioner and headers, inside its transactions. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

test('a topic per record, headers and a custom partitioner, committed exactly once', async () => {
  const brokers = testBrokers();
  const even = await createTestTopic(brokers, 'routing-even', 2);
  const odd = await createTestTopic(brokers, 'routing-odd', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-routing-'));
  try {
    Object.assign(process.env, { KAFKA_BROKERS: formatBootstrap(brokers), RT_EVEN: even.topic, RT_ODD: odd.topic });
    await runJob({
      job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'sink-routing-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
    });
    for (const [topic, parity] of [
      [even.topic, 'even'],
      [odd.topic, 'odd'],
    ] as const) {
      const records = await readTopic({ bootstrap: brokers, topic });
      assert.equal(records.length, 500);
      assert.ok(records.every((record) => record.partition === 1));
      assert.ok(records.every((record) => Number(record.value) % 2 === (parity === 'even' ? 0 : 1)));
      const headers = Object.fromEntries(records[0]?.headers.map(([name, value]) => [String(name), String(value)]) ?? []);
      assert.deepEqual(headers, { source: 'weir-test', parity });
      assert.equal(String(records[0]?.key).startsWith('key-'), true);
    }
  } finally {
    await even.remove();
    await odd.remove();
    await rm(folder, { recursive: true, force: true });
  }
});
