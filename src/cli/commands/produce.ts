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
import { type LineEncoder, registryLineEncoder } from './registry-lines.ts';
import { addRegistryOptions, isRegistryFormat, type RecordFormat, type RegistryCliOptions, registryOf } from './registry-options.ts';

interface ProduceOptions extends KafkaSettingsOptions, RegistryCliOptions {
  file?: string;
  transactional: boolean;
  batch: number;
  schema?: string;
  keySchema?: string;
  message?: string;
  keyMessage?: string;
  autoRegister: boolean;
  subjectStrategy: SubjectNameStrategy;
}

/** A line as a record: `key<TAB>value`, or the whole line as the value (a JSON line, say) with no key; registry-format keys and values encoded. */
function recordOf(line: string, where: string, keys: LineEncoder | undefined, values: LineEncoder | undefined, keyFormat: RecordFormat): KafkaProducerRecord {
  const tab = line.indexOf('\t');
  const key = tab < 0 ? undefined : line.slice(0, tab);
  const value = tab < 0 ? line : line.slice(tab + 1);
  if (keys !== undefined && key === undefined)
    throw new WeirError('INVALID_CONFIG', `${where}: --key-format ${keyFormat} and the line has no key`, { hint: 'write each line as key<TAB>value' });
  const record: KafkaProducerRecord = { value: values === undefined ? value : values.encode(value, where) };
  if (key !== undefined) record.key = keys === undefined ? key : keys.encode(key, where);
  return record;
}

const SCHEMA_FILES: Record<RecordFormat, string> = { string: '', avro: 'file.avsc', protobuf: 'file.proto', 'json-schema': 'schema.json' };

/** The registry encoders the formats ask for, their schemas' ids looked up (or registered) before any line is read. */
async function registryEncoders(topic: string, options: ProduceOptions): Promise<{ keys?: LineEncoder; values?: LineEncoder }> {
  for (const [format, flag, schema, message] of [
    [options.valueFormat, '--value-format', options.schema, options.message],
    [options.keyFormat, '--key-format', options.keySchema, options.keyMessage],
  ] as const) {
    const schemaFlag = flag === '--value-format' ? '--schema' : '--key-schema';
    const messageFlag = flag === '--value-format' ? '--message' : '--key-message';
    if (isRegistryFormat(format) && schema === undefined)
      throw new WeirError('INVALID_CONFIG', `${flag} ${format} needs the schema the records are written with`, {
        hint: `pass ${schemaFlag} <${SCHEMA_FILES[format]}>`,
      });
    if (!isRegistryFormat(format) && schema !== undefined)
      throw new WeirError('INVALID_CONFIG', `${schemaFlag} is given and ${flag} is ${format}`, {
        hint: `pass ${flag} avro, protobuf or json-schema to write in the registry's wire format, or leave ${schemaFlag} out`,
      });
    if (format !== 'protobuf' && message !== undefined)
      throw new WeirError('INVALID_CONFIG', `${messageFlag} is given and ${flag} is ${format}`, {
        hint: `${messageFlag} names a Protobuf message: pass ${flag} protobuf, or leave ${messageFlag} out`,
      });
  }
  const registry = registryOf(options);
  if (registry === undefined) return {};
  const common = { registry, topic, autoRegister: options.autoRegister, subjectStrategy: options.subjectStrategy };
  const encoder = (format: RecordFormat, schemaFile: string, flag: string, isKey: boolean, messageName: string | undefined): LineEncoder | undefined => {
    if (format === 'avro') return new AvroLineEncoder({ ...common, schemaFile, flag, isKey });
    if (format === 'protobuf' || format === 'json-schema')
      return registryLineEncoder(format, { ...common, schemaFile, flag, isKey, ...(messageName === undefined ? {} : { messageName }) });
    return undefined;
  };
  const values = encoder(options.valueFormat, options.schema as string, '--schema', false, options.message);
  const keys = encoder(options.keyFormat, options.keySchema as string, '--key-schema', true, options.keyMessage);
  await values?.prepare();
  await keys?.prepare();
  return { keys, values };
}

/**
 * `weir produce <topic>`: writes lines from stdin or a file as records: each line a value (JSON
 * lines as they are), or `key<TAB>value`. Keys pick partitions as Kafka's Java client does
 * (murmur2); lines without a key go round-robin. With --transactional, each batch of lines is one
 * committed transaction (a read_committed reader sees a batch whole or not at all). With
 * --value-format avro, protobuf or json-schema (--key-format), each value (key) is a JSON record
 * written in that format in the Schema Registry wire format, under the schema --schema
 * (--key-schema) gives (Protobuf: the message --message names, default the file's first), which the
 * topic's subject must hold (or --auto-register registers).
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
        .option('--schema <file>', 'the schema of the values: an Avro .avsc, a .proto or a JSON Schema file, as --value-format says')
        .option('--key-schema <file>', 'the schema of the keys (as --key-format says)')
        .option('--message <name>', "the values' Protobuf message (--value-format protobuf; default the .proto's first message)")
        .option('--key-message <name>', "the keys' Protobuf message (--key-format protobuf; default the .proto's first message)")
        .option('--auto-register', "register a schema its subject does not hold yet (the registry checks the subject's compatibility rule)", false)
        .addOption(
          new Option('--subject-strategy <strategy>', 'the subject: topic (<topic>-value, <topic>-key), record (the record name), topic-record')
            .choices(['topic', 'record', 'topic-record'])
            .default('topic'),
        ),
      'string (each line as it is), or avro, protobuf or json-schema (a JSON record, written in that format in the Schema Registry wire format)',
    ),
  ).action(async (topic: string, options: ProduceOptions) => {
    useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
    const { bootstrap, connection } = resolveKafkaConnection({}, 'weir produce');
    const connections = new ClusterConnections(bootstrap, { clientId: 'weir-produce', ...connection });
    try {
      await connections.topic(topic); // an unknown topic is one clear error naming it
      const { keys, values } = await registryEncoders(topic, options);
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
          pending.push(recordOf(line, `${from} line ${lineNumber}`, keys, values, options.keyFormat));
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
