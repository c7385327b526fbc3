import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { MessageRecord } from '@platformatic/kafka';
import { Command } from 'commander';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import { KafkaRecordSerializer } from '../../connectors/kafka/kafka-record-serializer.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import type { KafkaProducerRecord, KafkaSinkOptions } from '../../connectors/kafka/kafka-sink-options.ts';
import { PlainProducer } from '../../connectors/kafka/plain-producer.ts';
import { committableOf, TransactionDriver } from '../../connectors/kafka/transaction-driver.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

interface ProduceOptions extends KafkaSettingsOptions {
  file?: string;
  transactional: boolean;
  batch: number;
}

/** A line as a record: `key<TAB>value`, or the whole line as the value (a JSON line, say) with no key. */
function recordOf(line: string): KafkaProducerRecord {
  const tab = line.indexOf('\t');
  return tab < 0 ? { value: line } : { key: line.slice(0, tab), value: line.slice(tab + 1) };
}

/**
 * `weir produce <topic>`: writes lines from stdin or a file as records: each line a value (JSON
 * lines as they are), or `key<TAB>value`. Keys pick partitions as Kafka's Java client does
 * (murmur2); lines without a key go round-robin. With --transactional, each batch of lines is one
 * committed transaction (a read_committed reader sees a batch whole or not at all).
 */
export function produceCommand(): Command {
  return addKafkaOptions(
    new Command('produce')
      .description('write lines from stdin (or --file) to a topic: each line a value, or key<TAB>value')
      .argument('<topic>', 'the topic')
      .option('--file <path>', 'read the lines from this file instead of stdin')
      .option('--transactional', 'write each batch in one committed transaction', false)
      .option('--batch <lines>', 'lines per produce request (and per transaction)', positiveIntegerArgument, 1000),
  ).action(async (topic: string, options: ProduceOptions) => {
    useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
    const { bootstrap, connection } = resolveKafkaConnection({}, 'weir produce');
    const connections = new ClusterConnections(bootstrap, { clientId: 'weir-produce', ...connection });
    try {
      await connections.topic(topic); // an unknown topic is one clear error naming it
      const serializer = new KafkaRecordSerializer<KafkaProducerRecord>(
        { topic, serializer: (record: KafkaProducerRecord) => record } as unknown as KafkaSinkOptions<KafkaProducerRecord>,
        connections,
      );
      const plain = new PlainProducer(connections);
      const driver = options.transactional ? new TransactionDriver(connections, { transactionTimeoutMs: 60_000 }) : undefined;
      let transaction = driver === undefined ? undefined : await driver.initTransaction(`weir-produce-${randomBytes(6).toString('hex')}`);
      let records = 0;
      let transactions = 0;
      const flush = async (lines: string[]) => {
        if (lines.length === 0) return;
        const messages: MessageRecord[] = await serializer.serialize(lines.map(recordOf));
        if (driver !== undefined && transaction !== undefined) {
          await driver.send(transaction, messages);
          await driver.commit(committableOf(transaction));
          transaction = driver.nextTransaction(transaction);
          transactions++;
        } else {
          await plain.send(messages, -1);
        }
        records += lines.length;
      };
      const input = options.file === undefined ? process.stdin : createReadStream(options.file);
      input.once('error', () => {}); // reported below, as one error
      let pending: string[] = [];
      try {
        for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
          if (line === '') continue;
          pending.push(line);
          if (pending.length >= options.batch) {
            await flush(pending);
            pending = [];
          }
        }
      } catch (error) {
        throw new WeirError('INVALID_CONFIG', `cannot read ${options.file ?? 'stdin'}: ${(error as Error).message}`, {
          hint: 'give --file a readable file, or pipe the lines into stdin',
          cause: error,
        });
      }
      await flush(pending);
      process.stderr.write(`produced ${records} records to ${topic}${driver === undefined ? '' : ` in ${transactions} committed transactions`}\n`);
    } finally {
      await connections.close();
    }
  });
}
