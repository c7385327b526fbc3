import type { ConnectionOptions } from '@platformatic/kafka';
import { Command, Option } from 'commander';
import { auditTopic } from '../../audit/audit-topic.ts';
import { type BrokerAddress, formatBootstrap } from '../../connectors/kafka/kafka-connection-options.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import type { OpenPartitionTransaction } from '../../connectors/kafka/open-transactions.ts';
import type { TopicRecord } from '../../connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

export interface TopicAudit {
  topic: string;
  records: number;
  by: string;
  duplicates: { id: string; times: number }[];
  missing: number[];
  /** With --expect: ids outside 0..n-1. */
  unexpected: string[];
  openTransactions: OpenPartitionTransaction[];
}

/**
 * Reads a topic read_committed (up to its last stable offset: what a reader sees now) and looks
 * for duplicates by a JSON field or by key, for gaps in a sequence field (0..n-1 with --expect,
 * else between the smallest and the largest), and for transactions left open on its partitions
 * (which hold every read_committed reader back).
 */
export async function verifyTopic(options: {
  bootstrap: BrokerAddress[];
  /** TLS and SASL; default: the Kafka settings of the environment or the command. */
  connection?: ConnectionOptions;
  topic: string;
  field?: string;
  byKey: boolean;
  expect?: number;
}): Promise<TopicAudit> {
  const field = options.field;
  const idText = (record: TopicRecord): string => {
    const offset = `${record.partition}/${record.offset}`;
    if (options.byKey) return record.key === null ? `(no key at ${offset})` : record.key.toString('utf8');
    if (field === undefined) return record.value === null ? '' : record.value.toString('base64');
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(record.value));
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
  const audit = await auditTopic({
    bootstrap: options.bootstrap,
    connection: options.connection,
    topic: options.topic,
    until: 'last-stable-offset',
    openTransactions: true,
    parse: (record) => record,
    // Ids are compared as text; one that is an integer's own text is that integer, so --expect's 0..n-1 find it.
    idOf: (record) => {
      const text = idText(record);
      return /^(0|-?[1-9]\d*)$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
    },
    expected: options.expect !== undefined ? { kind: 'sequence', count: options.expect } : field !== undefined ? { kind: 'contiguous' } : undefined,
    sampleSize: Number.POSITIVE_INFINITY,
  });
  return {
    topic: options.topic,
    records: audit.records,
    by: options.byKey ? 'key' : (field ?? 'value'),
    duplicates: audit.duplicates.sample.map(({ id, times }) => ({ id: String(id), times })),
    missing: audit.missing.sample.map(Number),
    unexpected: audit.unexpected.sample.map(String),
    openTransactions: audit.openTransactions ?? [],
  };
}

export function verifyCommand(): Command {
  return addKafkaOptions(new Command('verify'))
    .description(
      'audit an output topic read_committed: duplicates and gaps by a sequence field or key, and transactions left open on its partitions; exits 1 on any violation',
    )
    .requiredOption('--topic <name>', 'the topic to audit')
    .option('--field <name>', 'the JSON field that identifies a record (a sequence number for gap detection)')
    .option('--by-key', 'identify records by their key instead', false)
    .addOption(new Option('--expect <n>', 'the sequence numbers 0..n-1 must each be there exactly once, and no other id').argParser(positiveIntegerArgument))
    .option('--json', 'print the report as JSON', false)
    .action(async (options: KafkaSettingsOptions & { topic: string; field?: string; byKey: boolean; expect?: number; json: boolean }) => {
      useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
      const { bootstrap, connection } = resolveKafkaConnection({}, 'weir verify');
      process.stderr.write(`reading ${options.topic} read_committed from ${formatBootstrap(bootstrap)}...\n`);
      const audit = await verifyTopic({
        bootstrap,
        connection,
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
        if (options.expect !== undefined) {
          console.log(`unexpected: ${audit.unexpected.length}${audit.unexpected.length > 0 ? ` (${sample(audit.unexpected)})` : ''}`);
        }
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
        audit.unexpected.length > 0 ? `${audit.unexpected.length} unexpected` : '',
        audit.openTransactions.length > 0 ? `${audit.openTransactions.length} open transactions` : '',
      ].filter(Boolean);
      if (violations.length > 0) {
        const hints = [
          audit.duplicates.length > 0
            ? 'duplicates: the writer was not exactly-once (check its deliveryGuarantee, and that it was not run twice over the same input), or the topic was read read_uncommitted'
            : '',
          audit.missing.length > 0
            ? 'missing records: the writer lost or skipped them (check its error policies and its input), or they are still in an open transaction'
            : '',
          audit.unexpected.length > 0 ? 'unexpected records: ids outside the expected range (check --expect and --field)' : '',
          audit.openTransactions.length > 0
            ? 'open transactions hold read_committed readers back; `weir doctor --prefix <prefix> --abort --checkpoint-storage <its storage>` ends those of a stopped job as its next start would'
            : '',
        ].filter(Boolean);
        throw new WeirError('VERIFY_FAILED', `${options.topic}: ${violations.join(', ')}`, { hint: hints.join('; ') });
      }
      console.log('OK');
    });
}
