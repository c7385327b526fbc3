import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { MessageRecord } from '@platformatic/kafka';
import { Command, Option } from 'commander';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import { KafkaRecordSerializer } from '../../connectors/kafka/kafka-record-serializer.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import type { KafkaProducerRecord, KafkaSinkOptions } from '../../connectors/kafka/kafka-sink-options.ts';
import { PlainProducer } from '../../connectors/kafka/plain-producer.ts';
import { committableOf, TransactionDriver } from '../../connectors/kafka/transaction-driver.ts';
import type { SubjectNameStrategy } from '../../connectors/schema-registry/subject-name.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';
import { AvroLineEncoder } from './avro-lines.ts';
import { addRegistryOptions, type RegistryCliOptions, registryOf } from './registry-options.ts';

interface ProduceOptions extends KafkaSettingsOptions, RegistryCliOptions {
  file?: string;
  transactional: boolean;
  batch: number;
  schema?: string;
  keySchema?: string;
  autoRegister: boolean;
  subjectStrategy: SubjectNameStrategy;
}

/** A line as a record: `key<TAB>value`, or the whole line as the value (a JSON line, say) with no key; avro keys and values encoded. */
function recordOf(line: string, where: string, keys: AvroLineEncoder | undefined, values: AvroLineEncoder | undefined): KafkaProducerRecord {
  const tab = line.indexOf('\t');
  const key = tab < 0 ? undefined : line.slice(0, tab);
  const value = tab < 0 ? line : line.slice(tab + 1);
  if (keys !== undefined && key === undefined)
    throw new WeirError('INVALID_CONFIG', `${where}: --key-format avro and the line has no key`, { hint: 'write each line as key<TAB>value' });
  const record: KafkaProducerRecord = { value: values === undefined ? value : values.encode(value, where) };
  if (key !== undefined) record.key = keys === undefined ? key : keys.encode(key, where);
  return record;
}

/** The Avro encoders the formats ask for, their schemas' ids looked up (or registered) before any line is read. */
async function avroEncoders(topic: string, options: ProduceOptions): Promise<{ keys?: AvroLineEncoder; values?: AvroLineEncoder }> {
  for (const [format, flag, schema] of [
    [options.valueFormat, '--value-format', options.schema],
    [options.keyFormat, '--key-format', options.keySchema],
  ] as const) {
    const schemaFlag = flag === '--value-format' ? '--schema' : '--key-schema';
    if (format === 'avro' && schema === undefined)
      throw new WeirError('INVALID_CONFIG', `${flag} avro needs the schema the records are written with`, { hint: `pass ${schemaFlag} <file.avsc>` });
    if (format !== 'avro' && schema !== undefined)
      throw new WeirError('INVALID_CONFIG', `${schemaFlag} is given and ${flag} is ${format}`, {
        hint: `pass ${flag} avro to write Avro, or leave ${schemaFlag} out`,
      });
  }
  const registry = registryOf(options);
  if (registry === undefined) return {};
  const common = { registry, topic, autoRegister: options.autoRegister, subjectStrategy: options.subjectStrategy };
  const values =
    options.valueFormat === 'avro' ? new AvroLineEncoder({ ...common, schemaFile: options.schema as string, flag: '--schema', isKey: false }) : undefined;
  const keys =
    options.keyFormat === 'avro' ? new AvroLineEncoder({ ...common, schemaFile: options.keySchema as string, flag: '--key-schema', isKey: true }) : undefined;
  await values?.prepare();
  await keys?.prepare();
  return { keys, values };
}

/**
 * `weir produce <topic>`: writes lines from stdin or a file as records: each line a value (JSON
 * lines as they are), or `key<TAB>value`. Keys pick partitions as Kafka's Java client does
 * (murmur2); lines without a key go round-robin. With --transactional, each batch of lines is one
 * committed transaction (a read_committed reader sees a batch whole or not at all). With
 * --value-format avro (--key-format avro), each value (key) is a JSON record written as Avro in the
 * Schema Registry wire format, under the schema --schema (--key-schema) gives, which the topic's
 * subject must hold (or --auto-register registers).
 */
export function produceCommand(): Command {
  return addKafkaOptions(
    addRegistryOptions(
      new Command('produce')
        .description('write lines from stdin (or --file) to a topic: each line a value, or key<TAB>value')
        .argument('<topic>', 'the topic')
        .option('--file <path>', 'read the lines from this file instead of stdin')
        .option('--transactional', 'write each batch in one committed transaction', false)
        .option('--batch <lines>', 'lines per produce request (and per transaction)', positiveIntegerArgument, 1000)
        .option('--schema <file.avsc>', 'the Avro schema of the values (--value-format avro)')
        .option('--key-schema <file.avsc>', 'the Avro schema of the keys (--key-format avro)')
        .option('--auto-register', "register a schema its subject does not hold yet (the registry checks the subject's compatibility rule)", false)
        .addOption(
          new Option('--subject-strategy <strategy>', 'the subject: topic (<topic>-value, <topic>-key), record (the record name), topic-record')
            .choices(['topic', 'record', 'topic-record'])
            .default('topic'),
        ),
      'string (each line as it is) or avro (a JSON record, written as Avro in the Schema Registry wire format)',
    ),
  ).action(async (topic: string, options: ProduceOptions) => {
    useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
    const { bootstrap, connection } = resolveKafkaConnection({}, 'weir produce');
    const connections = new ClusterConnections(bootstrap, { clientId: 'weir-produce', ...connection });
    try {
      await connections.topic(topic); // an unknown topic is one clear error naming it
      const { keys, values } = await avroEncoders(topic, options);
      const serializer = new KafkaRecordSerializer<KafkaProducerRecord>(
        { topic, serializer: (record: KafkaProducerRecord) => record } as unknown as KafkaSinkOptions<KafkaProducerRecord>,
        connections,
      );
      const plain = new PlainProducer(connections);
      const driver = options.transactional ? new TransactionDriver(connections, { transactionTimeoutMs: 60_000 }) : undefined;
      let transaction = driver === undefined ? undefined : await driver.initTransaction(`weir-produce-${randomBytes(6).toString('hex')}`);
      let records = 0;
      let transactions = 0;
      const flush = async (lines: KafkaProducerRecord[]) => {
        if (lines.length === 0) return;
        const messages: MessageRecord[] = await serializer.serialize(lines);
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
      const from = options.file ?? 'stdin';
      let pending: KafkaProducerRecord[] = [];
      let lineNumber = 0;
      try {
        for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
          lineNumber++;
          if (line === '') continue;
          pending.push(recordOf(line, `${from} line ${lineNumber}`, keys, values));
          if (pending.length >= options.batch) {
            await flush(pending);
            pending = [];
          }
        }
      } catch (error) {
        if (error instanceof WeirError) throw error; // a line that does not encode, or Kafka's answer
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
