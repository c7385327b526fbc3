import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from 'commander';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import {
  EARLIEST_OFFSET,
  fetchedRecords,
  fetchPartitions,
  type IsolationLevel,
  LATEST_OFFSET,
  listOffsets,
  type TopicRecord,
} from '../../connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { nonNegativeIntegerArgument, positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';
import { AvroRecordDecoder } from './avro-lines.ts';
import { type RecordDecoder, registryRecordDecoder } from './registry-lines.ts';
import { addRegistryOptions, type RecordFormat, type RegistryCliOptions, registryOf } from './registry-options.ts';

interface ConsumeOptions extends KafkaSettingsOptions, RegistryCliOptions {
  from: string;
  partition?: number;
  max?: number;
  follow: boolean;
  isolation: IsolationLevel;
  json: boolean;
}

/** Where to start: earliest, latest, or an offset (in every partition read). */
function startOf(from: string): bigint {
  if (from === 'earliest') return EARLIEST_OFFSET;
  if (from === 'latest') return LATEST_OFFSET;
  if (/^\d+$/.test(from)) return BigInt(from);
  throw new WeirError('INVALID_CONFIG', `--from ${JSON.stringify(from)}: expected earliest, latest or an offset`, {
    hint: 'e.g. --from earliest or --from 1200',
  });
}

/** How a key or a value is shown: its text, or (a registry format) its record as JSON (Avro: Avro's JSON encoding). */
interface Shown {
  text: string | null;
  /** Set when the text is a JSON record: --json then nests it as an object. */
  json: boolean;
}

/** A registry format's decoder, and its name for messages. */
interface Decoder {
  decoder: RecordDecoder;
  format: string;
}

const FORMAT_NAMES: Record<RecordFormat, string> = { string: 'text', avro: 'Avro', protobuf: 'Protobuf', 'json-schema': 'JSON Schema' };

/** The decoder of a registry format (undefined for string). */
function decoderOf(format: RecordFormat, registry: ReturnType<typeof registryOf>): Decoder | undefined {
  if (registry === undefined || format === 'string') return undefined;
  const decoder = format === 'avro' ? new AvroRecordDecoder(registry) : registryRecordDecoder(format, registry);
  return { decoder, format: FORMAT_NAMES[format] };
}

/** The key or value as it prints; a registry-format one that does not decode is printed as text, with why on stderr. */
function shown(bytes: Buffer | null, decoder: Decoder | undefined, record: TopicRecord, what: string): Shown {
  if (decoder === undefined || bytes === null) return { text: bytes?.toString('utf8') ?? null, json: false };
  try {
    return { text: decoder.decoder.decode(bytes), json: true };
  } catch (error) {
    process.stderr.write(
      `${record.topic} partition ${record.partition} offset ${record.offset}: the ${what} is not ${decoder.format} of the registry: ${(error as Error).message}\n`,
    );
    return { text: bytes.toString('utf8'), json: false };
  }
}

function print(record: TopicRecord, json: boolean, keys: Decoder | undefined, values: Decoder | undefined): void {
  const key = shown(record.key, keys, record, 'key');
  const value = shown(record.value, values, record, 'value');
  if (json) {
    const field = (part: Shown) => (part.json ? (part.text as string) : JSON.stringify(part.text));
    console.log(
      `{"partition":${record.partition},"offset":"${record.offset}","timestamp":${Number(record.timestamp)},"key":${field(key)},"value":${field(value)}}`,
    );
  } else {
    console.log(`${record.partition}\t${record.offset}\t${key.text ?? ''}\t${value.text ?? ''}`);
  }
}

/**
 * `weir consume <topic>`: prints a topic's records (partition, offset, key, value), read
 * read_committed by default (what a job downstream sees), from the earliest offset, a given one or
 * the latest; up to its end as it is when the command starts, or with --follow as records come.
 * With --value-format avro, protobuf or json-schema (--key-format), values (keys) in the Schema
 * Registry wire format print as JSON (Avro: Avro's JSON encoding; Protobuf: int64 as strings, enums
 * by name, bytes as base64), each schema fetched once from the registry.
 */
export function consumeCommand(): Command {
  return addKafkaOptions(
    addRegistryOptions(
      new Command('consume')
        .description('print a topic’s records: partition, offset, key and value (read_committed by default)')
        .argument('<topic>', 'the topic')
        .option('--from <where>', 'earliest, latest, or an offset', 'earliest')
        .option('--partition <n>', 'only this partition', nonNegativeIntegerArgument)
        .option('--max <n>', 'stop after this many records', positiveIntegerArgument)
        .option('--follow', 'keep reading new records until interrupted', false)
        .addOption(
          new Option('--isolation <level>', 'read_committed sees committed transactions only')
            .choices(['read_committed', 'read_uncommitted'])
            .default('read_committed'),
        )
        .option('--json', 'one JSON object per record: partition, offset, timestamp, key, value', false),
      'string (the bytes as UTF-8 text), or avro, protobuf or json-schema (that format in the Schema Registry wire format, printed as JSON)',
    ),
  ).action(async (topic: string, options: ConsumeOptions) => {
    useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
    const { bootstrap, connection } = resolveKafkaConnection({}, 'weir consume');
    const registry = registryOf(options);
    const keys = decoderOf(options.keyFormat, registry);
    const values = decoderOf(options.valueFormat, registry);
    const connections = new ClusterConnections(bootstrap, { clientId: 'weir-consume', ...connection });
    let stopped = false;
    const stop = () => {
      stopped = true;
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      const info = await connections.topic(topic);
      const partitions = info.partitions.filter((partition) => options.partition === undefined || partition.partition === options.partition);
      if (partitions.length === 0) {
        throw new WeirError('INVALID_CONFIG', `--partition ${options.partition}: topic "${topic}" has partitions 0 to ${info.partitions.length - 1}`, {
          hint: '`weir topic describe` shows them',
        });
      }
      const start = startOf(options.from);
      const positions =
        start < 0n
          ? await listOffsets(connections, info, partitions, options.isolation, start)
          : new Map(partitions.map((partition) => [partition.partition, start]));
      // Without --follow: up to the end as it is now (read_committed: what a reader can see now).
      const ends = options.follow ? undefined : await listOffsets(connections, info, partitions, options.isolation, LATEST_OFFSET);
      const topics = new Map([[info.name, info]]);
      let printed = 0;
      const todo = () =>
        partitions.filter((partition) => ends === undefined || (positions.get(partition.partition) as bigint) < (ends.get(partition.partition) as bigint));
      for (let left = todo(); left.length > 0 && !stopped; left = todo()) {
        const results = await fetchPartitions(
          connections,
          topics,
          left.map((partition) => ({ topic: info.name, partition: partition.partition, offset: positions.get(partition.partition) as bigint })),
          { isolation: options.isolation, maxWaitMs: 500 },
        );
        let progressed = false;
        for (const result of results) {
          const end = ends?.get(result.partition);
          const records = [...fetchedRecords(result)];
          // Every schema id of the batch fetched at once, before its first record prints.
          if (keys !== undefined) await keys.decoder.prepare(records.map((record) => record.key));
          if (values !== undefined) await values.decoder.prepare(records.map((record) => record.value));
          for (const record of records) {
            if (end !== undefined && record.offset >= end) break;
            print(record, options.json, keys, values);
            if (options.max !== undefined && ++printed >= options.max) return;
          }
          if (result.nextOffset > (positions.get(result.partition) as bigint)) {
            positions.set(result.partition, end === undefined || result.nextOffset < end ? result.nextOffset : end);
            progressed = true;
          }
        }
        if (!progressed && ends !== undefined) await sleep(50);
      }
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      await connections.close();
    }
  });
}
