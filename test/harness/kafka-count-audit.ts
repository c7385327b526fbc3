/** Writes the chaos input and audits the kafka-count job's output, read back read_committed. */
import { auditTopic } from '../../src/audit/audit-topic.ts';

import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { committableOf, TransactionDriver } from '../../src/connectors/kafka/transaction-driver.ts';
import type { CountOutput } from '../fixtures/jobs/kafka-count-job.ts';

export const ABORTED_SEQ_BASE = 1_000_000;
export const KEYS = 40;

/**
 * Writes `count` records {seq, key} in committed transactions of 1000, and after every fifth one a
 * transaction of 200 records with seq >= ABORTED_SEQ_BASE that is aborted, each to the partition
 * `partitionOf` picks (default seq modulo the partitions). Returns the committed count.
 */
export async function writeChaosInput(
  brokers: readonly BrokerAddress[],
  topic: string,
  partitions: number,
  count: number,
  partitionOf: (seq: number, key: string) => number = (seq) => seq % partitions,
): Promise<number> {
  const connections = new ClusterConnections(brokers);
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
  const message = (seq: number) => ({
    topic,
    partition: partitionOf(seq, `key-${seq % KEYS}`),
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
  /** Outputs whose seq is neither a committed nor an aborted input. */
  unexpected: number;
  fromAborted: number;
  wrongCounts: number;
}

/** Every committed seq exactly once, none from aborted input, and per key the counts exactly 1..n, n the key's number of inputs. */
export async function auditCounts(brokers: readonly BrokerAddress[], topic: string, count: number): Promise<CountAudit> {
  const expectedCounts = new Map<string, number>();
  for (let key = 0; key < KEYS; key++) expectedCounts.set(`key-${key}`, Math.floor(count / KEYS) + (key < count % KEYS ? 1 : 0));
  const audit = await auditTopic({
    bootstrap: brokers,
    topic,
    timeoutMs: 120_000,
    parse: (record) => JSON.parse(String(record.value)) as CountOutput,
    idOf: (output) => output.seq,
    expected: { kind: 'sequence', count },
    fromAborted: (seq) => seq >= ABORTED_SEQ_BASE,
    running: { keyOf: (output) => output.key, valueOf: (output) => output.count, deltaOf: () => 1, expectedFinal: expectedCounts },
  });
  return {
    outputs: audit.records,
    duplicates: audit.duplicates.copies,
    missing: audit.missing.ids,
    unexpected: audit.unexpected.records,
    fromAborted: audit.fromAborted.records,
    wrongCounts: audit.wrongKeys.length,
  };
}

/** What the audit of an exact output of `count` inputs says: every input once, each key's counts 1..n, nothing else. */
export function exactCountAudit(count: number): CountAudit {
  return { outputs: count, duplicates: 0, missing: 0, unexpected: 0, fromAborted: 0, wrongCounts: 0 };
}
