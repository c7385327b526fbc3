/** Writes the chaos input and audits the kafka-count job's output, read back read_committed. */

import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import { committableOf, TransactionDriver } from '../../src/connectors/kafka/transaction-driver.ts';
import type { CountOutput } from '../fixtures/jobs/kafka-count-job.ts';

export const ABORTED_SEQ_BASE = 1_000_000;
export const KEYS = 40;

/**
 * Writes `count` records {seq, key} in committed transactions of 1000, and after every fifth one a
 * transaction of 200 records with seq >= ABORTED_SEQ_BASE that is aborted. Returns the committed count.
 */
export async function writeChaosInput(brokers: readonly BrokerAddress[], topic: string, partitions: number, count: number): Promise<number> {
  const connections = new ClusterConnections(brokers);
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
  const message = (seq: number) => ({
    topic,
    partition: seq % partitions,
    key: Buffer.from(`key-${seq % KEYS}`),
    value: Buffer.from(JSON.stringify({ seq, key: `key-${seq % KEYS}` })),
  });
  try {
    for (let first = 0, batch = 0; first < count; first += 1000, batch++) {
      const committed = await driver.initTransaction(`${topic}-writer`);
      await driver.send(
        committed,
        Array.from({ length: Math.min(1000, count - first) }, (_, i) => message(first + i)),
      );
      await driver.commit(committableOf(committed));
      if (batch % 5 === 4) {
        const aborted = await driver.initTransaction(`${topic}-writer`);
        await driver.send(
          aborted,
          Array.from({ length: 200 }, (_, i) => message(ABORTED_SEQ_BASE + first + i)),
        );
        await driver.abort(aborted);
      }
    }
  } finally {
    await connections.close();
  }
  return count;
}

export interface CountAudit {
  outputs: number;
  duplicates: number;
  missing: number;
  fromAborted: number;
  wrongCounts: number;
}

export async function auditCounts(brokers: readonly BrokerAddress[], topic: string, count: number): Promise<CountAudit> {
  const outputs = (await readTopic({ bootstrap: brokers, topic, timeoutMs: 120_000 })).map((record) => JSON.parse(String(record.value)) as CountOutput);
  const seen = new Map<number, number>();
  let fromAborted = 0;
  for (const output of outputs) {
    if (output.seq >= ABORTED_SEQ_BASE) fromAborted++;
    seen.set(output.seq, (seen.get(output.seq) ?? 0) + 1);
  }
  let duplicates = 0;
  for (const times of seen.values()) if (times > 1) duplicates += times - 1;
  let missing = 0;
  for (let seq = 0; seq < count; seq++) if (!seen.has(seq)) missing++;
  // Per key the counts must be exactly 1..n, n the key's number of inputs.
  let wrongCounts = 0;
  for (let key = 0; key < KEYS; key++) {
    const counts = outputs
      .filter((output) => output.key === `key-${key}`)
      .map((output) => output.count)
      .sort((a, b) => a - b);
    const expected = Math.floor(count / KEYS) + (key < count % KEYS ? 1 : 0);
    if (counts.length !== expected || counts.some((value, index) => value !== index + 1)) wrongCounts++;
  }
  return { outputs: outputs.length, duplicates, missing, fromAborted, wrongCounts };
}
