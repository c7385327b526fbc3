import { Command, Option } from 'commander';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, formatBootstrap, resolveBootstrap } from '../../connectors/kafka/kafka-connection-options.ts';
import { describeOpenTransactions, type OpenPartitionTransaction } from '../../connectors/kafka/open-transactions.ts';
import { readTopic } from '../../connectors/kafka/topic-reader.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { positiveIntegerArgument } from '../arguments.ts';

export interface TopicAudit {
  topic: string;
  records: number;
  by: string;
  duplicates: { id: string; times: number }[];
  missing: number[];
  openTransactions: OpenPartitionTransaction[];
}

/**
 * Reads a topic read_committed (up to its last stable offset: what a reader sees now) and looks
 * for duplicates by a JSON field or by key, for gaps in a sequence field, and for transactions
 * left open on its partitions (which hold every read_committed reader back).
 */
export async function auditTopic(options: { bootstrap: BrokerAddress[]; topic: string; field?: string; byKey: boolean; expect?: number }): Promise<TopicAudit> {
  const records = await readTopic({ bootstrap: options.bootstrap, topic: options.topic, until: 'last-stable-offset' });
  const field = options.field;
  const idOf = (value: Buffer | null, key: Buffer | null, offset: string): string => {
    if (options.byKey) return key === null ? `(no key at ${offset})` : key.toString('utf8');
    if (field === undefined) return value === null ? '' : value.toString('base64');
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(value));
    } catch {
      throw new WeirError('VERIFY_NOT_JSON', `the record at ${offset} of "${options.topic}" is not JSON, so --field ${field} cannot be read`, {
        hint: 'leave out --field to compare whole values, or use --by-key',
      });
    }
    const id = (parsed as Record<string, unknown> | null)?.[field];
    if (id === undefined) {
      throw new WeirError('VERIFY_NO_FIELD', `the record at ${offset} of "${options.topic}" has no field "${field}"`, {
        hint: 'name a field every record has',
      });
    }
    return String(id);
  };
  const counts = new Map<string, number>();
  for (const record of records) {
    const id = idOf(record.value, record.key, `${record.partition}/${record.offset}`);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const duplicates = [...counts].filter(([, times]) => times > 1).map(([id, times]) => ({ id, times }));
  const missing: number[] = [];
  if (options.expect !== undefined) {
    for (let seq = 0; seq < options.expect; seq++) if (!counts.has(String(seq))) missing.push(seq);
  } else if (field !== undefined) {
    const numbers = [...counts.keys()].map(Number).filter(Number.isInteger);
    if (numbers.length === counts.size && numbers.length > 0) {
      const seen = new Set(numbers);
      for (let seq = Math.min(...numbers); seq <= Math.max(...numbers); seq++) if (!seen.has(seq)) missing.push(seq);
    }
  }
  const connections = new ClusterConnections(options.bootstrap, { clientId: 'weir-verify' });
  try {
    const openTransactions = await describeOpenTransactions(connections, await connections.topic(options.topic));
    return { topic: options.topic, records: records.length, by: options.byKey ? 'key' : (field ?? 'value'), duplicates, missing, openTransactions };
  } finally {
    await connections.close();
  }
}

export function verifyCommand(): Command {
  return new Command('verify')
    .description(
      'audit an output topic read_committed: duplicates and gaps by a sequence field or key, and transactions left open on its partitions; exits 1 on any violation',
    )
    .requiredOption('--topic <name>', 'the topic to audit')
    .option('--brokers <host:port,...>', 'the cluster (default KAFKA_BROKERS)')
    .option('--field <name>', 'the JSON field that identifies a record (a sequence number for gap detection)')
    .option('--by-key', 'identify records by their key instead', false)
    .addOption(new Option('--expect <n>', 'the sequence numbers 0..n-1 must each be there exactly once').argParser(positiveIntegerArgument))
    .option('--json', 'print the report as JSON', false)
    .action(async (options: { topic: string; brokers?: string; field?: string; byKey: boolean; expect?: number; json: boolean }) => {
      const bootstrap = resolveBootstrap(options.brokers, 'weir verify --brokers');
      process.stderr.write(`reading ${options.topic} read_committed from ${formatBootstrap(bootstrap)}...\n`);
      const audit = await auditTopic({
        bootstrap,
        topic: options.topic,
        byKey: options.byKey,
        ...(options.field === undefined ? {} : { field: options.field }),
        ...(options.expect === undefined ? {} : { expect: options.expect }),
      });
      if (options.json) {
        console.log(JSON.stringify(audit, (_key, value) => (typeof value === 'bigint' ? value.toString() : value), 2));
      } else {
        const sample = (values: unknown[]) => `${values.slice(0, 10).join(', ')}${values.length > 10 ? ', ...' : ''}`;
        console.log(`topic ${audit.topic}: ${audit.records} records read_committed, identified by ${audit.by}`);
        console.log(
          `duplicates: ${audit.duplicates.length}${audit.duplicates.length > 0 ? ` (${sample(audit.duplicates.map((entry) => `${entry.id} x${entry.times}`))})` : ''}`,
        );
        console.log(`missing: ${audit.missing.length}${audit.missing.length > 0 ? ` (${sample(audit.missing)})` : ''}`);
        console.log(
          `open transactions: ${audit.openTransactions.length}${audit.openTransactions
            .map(
              (open) =>
                `\n  partition ${open.partition}: producer ${open.producerId} (epoch ${open.producerEpoch}) since offset ${open.startOffset}, last write ${Math.round((Date.now() - open.lastTimestamp) / 1000)} s ago`,
            )
            .join('')}`,
        );
      }
      const violations = [
        audit.duplicates.length > 0 ? `${audit.duplicates.length} duplicated` : '',
        audit.missing.length > 0 ? `${audit.missing.length} missing` : '',
        audit.openTransactions.length > 0 ? `${audit.openTransactions.length} open transactions` : '',
      ].filter(Boolean);
      if (violations.length > 0) {
        throw new WeirError('VERIFY_FAILED', `${options.topic}: ${violations.join(', ')}`, {
          hint: 'open transactions hold read_committed readers back; `weir doctor --prefix <prefix> --abort` aborts those of a stopped job',
        });
      }
      console.log('OK');
    });
}
