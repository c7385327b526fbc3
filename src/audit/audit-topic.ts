import type { ConnectionOptions } from '@platformatic/kafka';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { defaultKafkaSettings } from '../connectors/kafka/kafka-default-connection.ts';
import { describeOpenTransactions, type OpenPartitionTransaction } from '../connectors/kafka/open-transactions.ts';
import type { TopicRecord } from '../connectors/kafka/partition-fetcher.ts';
import { type ReadTopicOptions, readTopic } from '../connectors/kafka/topic-reader.ts';
import { type AuditId, type AuditReport, type AuditSpec, RecordAudit } from './audit-records.ts';

export interface AuditTopicOptions<R, I extends AuditId = AuditId> extends AuditSpec<R, I> {
  bootstrap: readonly BrokerAddress[];
  /** TLS and SASL; default: the Kafka settings of the environment or the command (readTopic). */
  connection?: ConnectionOptions | undefined;
  topic: string;
  /** Turns a Kafka record into the record the spec looks at (JSON.parse of the value, say); it may throw a WeirError naming the record. */
  parse(record: TopicRecord): R;
  /** Where the read stops (readTopic): the high watermark (the default: waits for open transactions) or the last stable offset (what a reader sees now). */
  until?: ReadTopicOptions['until'];
  /** Give up reading after this long (readTopic's default: 60 s). */
  timeoutMs?: number;
  /** Also list the transactions left open on the topic's partitions: they hold every read_committed reader back. */
  openTransactions?: boolean;
}

export interface TopicAuditReport<I extends AuditId = AuditId> extends AuditReport<I> {
  topic: string;
  /** With `openTransactions`: the transactions open on the topic's partitions (then `ok` also needs there to be none). */
  openTransactions?: OpenPartitionTransaction[];
}

/**
 * Reads a whole topic read_committed with Weir's own reader (readTopic), audits every record
 * (audit-records.ts) and, when asked, reports the transactions left open on its partitions.
 */
export async function auditTopic<R, I extends AuditId = AuditId>(options: AuditTopicOptions<R, I>): Promise<TopicAuditReport<I>> {
  const records = await readTopic({
    bootstrap: options.bootstrap,
    connection: options.connection,
    topic: options.topic,
    until: options.until,
    timeoutMs: options.timeoutMs,
  });
  const audit = new RecordAudit(options);
  for (let i = 0; i < records.length; i++) audit.add(options.parse(records[i] as TopicRecord));
  const report: TopicAuditReport<I> = { topic: options.topic, ...audit.report() };
  if (options.openTransactions === true) {
    const connections = new ClusterConnections(options.bootstrap, { clientId: 'weir-audit', ...(options.connection ?? defaultKafkaSettings().connection) });
    try {
      report.openTransactions = await describeOpenTransactions(connections, await connections.topic(options.topic));
    } finally {
      await connections.close();
    }
    report.ok &&= report.openTransactions.length === 0;
  }
  return report;
}
