import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

/** The input, output and dead-letter topics of a registry job test (2 partitions each) and a scratch folder; each one's removal pushed on `cleanups`. */
export async function jobTopics(label: string, cleanups: (() => Promise<void>)[]): Promise<{ input: string; output: string; dlq: string; folder: string }> {
  const made = await Promise.all(['in', 'out', 'dlq'].map((kind) => createTestTopic(testBrokers(), `${label}-${kind}`, 2)));
  const folder = await mkdtemp(join(tmpdir(), `weir-${label}-`));
  for (const topic of made) cleanups.push(topic.remove);
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  const [input, output, dlq] = made.map((topic) => topic.topic) as [string, string, string];
  return { input, output, dlq, folder };
}

/** Writes `values` to `input`: the one of seq on partition seq % 2, keyed `k-<seq>`. */
export async function produceValues(input: string, values: readonly Buffer[]): Promise<void> {
  const connections = new ClusterConnections(testBrokers());
  try {
    const producer = new PlainProducer(connections);
    const records = values.map((value, seq) => ({ topic: input, partition: seq % 2, key: Buffer.from(`k-${seq}`), value }));
    for (let i = 0; i < records.length; i += 500) await producer.send(records.slice(i, i + 500), -1);
  } finally {
    await connections.close();
  }
}
