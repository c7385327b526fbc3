import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import { durationOption, functionOption, type OptionMeta, type ProblemParams, parseConnectorOptions, type Same } from '../connector-options.ts';
import { type OnRecordError, onDeserializationErrorMeta, onRecordErrorSchema } from './dead-letter-sink.ts';
import { bootstrapOption, connectionOption } from './kafka-connection-options.ts';
import type { IsolationLevel, TopicRecord } from './partition-fetcher.ts';

/** Where a partition starts when the job starts without a checkpoint. */
export type StartingOffsets =
  | 'earliest'
  | 'latest'
  /** The consumer group's committed offset, else the fallback. */
  | { committed: { fallback: 'earliest' | 'latest' } }
  /** The first offset whose record timestamp is at or after this time (ms since the epoch). */
  | { timestamp: number }
  /** Explicit offsets by "topic:partition"; partitions not listed start at the fallback. */
  | { offsets: Record<string, number | bigint>; fallback?: 'earliest' | 'latest' };

/**
 * The options of `kafkaSource`. They are validated by the zod schema below (which also documents
 * them in docs/configuration.md); the two must agree, and the typecheck says so when they do not.
 */
export interface KafkaSourceOptions<T> {
  /** host:port list; default KAFKA_BROKERS. */
  bootstrap?: string | string[];
  /** Topic names, or a pattern every matching topic is read from (topics created later included, unless bounded). */
  topics: string[] | RegExp;
  startingOffsets?: StartingOffsets;
  /** Stop at the (last stable) offsets each partition has when the job first starts: for tests and benchmarks. */
  bounded?: boolean;
  /** Default read_committed: records of aborted and open transactions are never read. */
  isolation?: IsolationLevel;
  /** Turns a Kafka record into the job's record; see `kafkaDeserializers`. */
  deserializer: (record: TopicRecord) => T;
  /** Offsets are committed to this consumer group when a checkpoint completes, for monitoring only (the checkpoint is what counts). */
  groupId?: string;
  /** TLS and SASL options passed to every connection. */
  connection?: ConnectionOptions;
  /** How long a fetch waits on the broker for data. Default 100 ms. */
  maxWaitMs?: number;
  /** The most bytes one fetch takes of a partition. Default 1 MiB. */
  maxBytesPerPartition?: number;
  /**
   * The most bytes one fetch of a subtask takes over all its partitions, shared evenly between
   * them (at least 64 KiB each, at most `maxBytesPerPartition`). Fetched records wait as their bytes
   * and are decoded a batch at a time as they are emitted, so this bounds the source's memory
   * whatever the partition count. Default 256 KiB: a fetch's bytes then die young, before V8
   * promotes them (docs/benchmarks.md).
   */
  maxBytesPerFetch?: number;
  /**
   * How often new partitions (and, with a pattern, new topics) are looked for; new ones are read
   * from their earliest offset. Default 30 s; 0 turns discovery off. Bounded sources never discover.
   */
  partitionDiscoveryInterval?: number | string;
  /**
   * What happens when the offset to read is no longer in the partition (retention or DeleteRecords
   * passed a checkpointed offset while the job was down): 'fail' (default) names the lost range;
   * 'earliest' or 'latest' go on from there with a loud warning, counted in recordsLostOutOfRange.
   */
  onOffsetOutOfRange?: OffsetOutOfRangePolicy;
  /**
   * What a record the deserializer throws on does: 'fail' (default; the error names topic,
   * partition, offset and the record's first bytes), 'skip' (counted in recordsSkipped), or
   * { deadLetter: { topic } } (its bytes and headers go there, counted in deadLetters).
   */
  onDeserializationError?: OnRecordError;
  /** How long fetches and metadata requests are retried while brokers are unreachable or leaders move, before the task fails. Default 1 minute. */
  retryTimeout?: number | string;
}

/** What the Kafka source does with an offset the partition no longer holds (Kafka's auto.offset.reset, made explicit). */
export type OffsetOutOfRangePolicy = 'fail' | 'earliest' | 'latest';

const offsetsFallback = z.enum(['earliest', 'latest'], { error: "must be 'earliest' or 'latest'" });
// Whole numbers are checked by a refinement, not .int(): inside a union, a failed refinement is
// reported for the form the value has, where a failed type check only says no form matched.
const wholeNumber = () => z.number().min(0).refine(Number.isInteger, 'must be a whole number');

export const startingOffsetsSchema = z.union(
  [
    z.literal('earliest'),
    z.literal('latest'),
    z.strictObject({ timestamp: wholeNumber() }),
    z.strictObject({
      offsets: z.record(z.string(), z.union([wholeNumber(), z.bigint().min(0n)])).superRefine((offsets, context) => {
        for (const key of Object.keys(offsets)) {
          if (!/^.+:\d+$/.test(key)) context.addIssue({ code: 'custom', message: `the key ${JSON.stringify(key)} is not "topic:partition"` });
        }
      }),
      fallback: offsetsFallback.optional(),
    }),
    z.strictObject({ committed: z.strictObject({ fallback: offsetsFallback }) }),
  ],
  {
    error:
      "must be 'earliest', 'latest', { timestamp: <ms since the epoch> }, { offsets: { 'topic:partition': offset }, fallback? } or { committed: { fallback: 'earliest' | 'latest' } }",
  },
);

/**
 * The Kafka source's options as a zod schema: validated once when `kafkaSource(...)` is called,
 * and the source of the options table in docs/configuration.md (scripts/gen-config-reference.ts).
 * Every option carries its OptionMeta (connector-options.ts).
 */
export const kafkaSourceOptionsSchema = z
  .strictObject({
    bootstrap: bootstrapOption('kafkaSource'),
    topics: z
      .union([z.array(z.string().min(1)).min(1, { error: 'kafkaSource needs at least one topic' }), z.instanceof(RegExp)], {
        error: 'must be an array of topic names or a RegExp',
      })
      .meta({
        description: 'Topic names (at least one), or a `RegExp`: every matching topic is read, and so are matching topics created later (unless `bounded`).',
        hint: 'pass topics: ["name", ...] or a pattern such as /^orders-/',
        typeText: 'string[] | RegExp',
      } satisfies OptionMeta),
    startingOffsets: startingOffsetsSchema.default('earliest').meta({
      description:
        'Where each partition starts when the job starts without a checkpoint or savepoint (a restore always uses the checkpointed offsets): ' +
        "the earliest or latest offset, the first record at or after a timestamp, explicit offsets by `'topic:partition'` (other partitions start at the fallback, default earliest), " +
        "or the `groupId`'s committed offsets (partitions without one start at the fallback).",
      hint: "use 'earliest', 'latest', { timestamp }, { offsets, fallback } or { committed: { fallback } } (the last needs a groupId)",
    } satisfies OptionMeta),
    bounded: z
      .boolean()
      .default(false)
      .meta({
        description:
          'Stop at the last stable offsets the partitions have when the job first starts; the job then takes a final checkpoint and finishes. For tests and benchmarks.',
        hint: 'pass true or false',
      } satisfies OptionMeta),
    isolation: z
      .enum(['read_committed', 'read_uncommitted'])
      .default('read_committed')
      .meta({
        description:
          'Which records are read: `read_uncommitted` also sees records of aborted and still open transactions (the preflight warns about it in an exactly-once job).',
        hint: "leave isolation at its default, 'read_committed'",
      } satisfies OptionMeta),
    deserializer: functionOption<(record: TopicRecord) => unknown>('(record) => T').meta({
      description:
        "Turns a Kafka record (`topic`, `partition`, `offset`, `timestamp`, `key`, `value`, `headers`) into the job's record. Ready-made: `kafkaDeserializers.string`, `.json`, `.bytes`.",
      hint: 'pass deserializer: kafkaDeserializers.json (or .string, .bytes, or your own (record) => T)',
      typeText: '(record: TopicRecord) => T',
    } satisfies OptionMeta),
    groupId: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          "A consumer group: offsets are committed to it when a checkpoint completes, for monitoring (lag) only; a restore uses the checkpoint's offsets. Needed by `startingOffsets: { committed }`.",
        hint: 'give a consumer group name, or leave groupId out',
      } satisfies OptionMeta),
    connection: connectionOption(),
    maxWaitMs: z
      .number()
      .int()
      .min(0)
      .default(100)
      .meta({
        description: 'How long a fetch waits on the broker for data, in milliseconds.',
        hint: 'give a whole number of milliseconds, 0 or more',
      } satisfies OptionMeta),
    maxBytesPerPartition: z
      .number()
      .int()
      .min(1)
      .default(1024 * 1024)
      .meta({ description: 'The most bytes one fetch takes of one partition.', hint: 'give a whole number of bytes, 1 or more' } satisfies OptionMeta),
    maxBytesPerFetch: z
      .number()
      .int()
      .min(1)
      .default(256 * 1024)
      .meta({
        description:
          "The most bytes one fetch of a subtask takes over all its partitions, shared evenly between them (at least 64 KiB each, at most `maxBytesPerPartition`); fetched records wait as bytes and are decoded a batch at a time as they are emitted, so this bounds the source's memory whatever the partition count. A record batch larger than its share is still read, when its partition comes first in a fetch (the order rotates).",
        hint: 'give a whole number of bytes, 1 or more',
      } satisfies OptionMeta),
    partitionDiscoveryInterval: durationOption('kafkaSource partitionDiscoveryInterval')
      .default(30_000)
      .meta({
        description:
          'How often to look for new partitions and, with a pattern, new topics; a new partition is read from its earliest offset by the subtask a stable hash of its name picks. `0` turns discovery off; a bounded source never discovers.',
        hint: 'give milliseconds or a number with a unit, for example 500ms, 10s, 15m or 1h; 0 turns discovery off',
      } satisfies OptionMeta),
    onDeserializationError: onRecordErrorSchema('kafkaSource onDeserializationError').meta(onDeserializationErrorMeta),
    onOffsetOutOfRange: z
      .enum(['fail', 'earliest', 'latest'], { error: "must be 'fail', 'earliest' or 'latest'" })
      .default('fail')
      .meta({
        description:
          'What happens when the offset to read is out of range: the partition no longer holds it (retention or DeleteRecords passed a checkpointed offset while the job was down) or it is past the end (the topic was recreated). ' +
          "`fail`: the job fails, naming the partition, the offset and the range the partition holds, so the records lost are known. `earliest` or `latest`: the source goes on from the partition's earliest or latest offset, logs a warning naming the range skipped, and counts the records skipped in the `recordsLostOutOfRange` metric.",
        hint: "use 'fail' (the default), 'earliest' or 'latest'",
      } satisfies OptionMeta),
    retryTimeout: durationOption('kafkaSource retryTimeout')
      .default(60_000)
      .meta({
        description:
          'How long fetches and metadata requests are retried, with backoff, while brokers are unreachable (a broker restarting) or a leader moves, before the task fails and the job restarts as `restartStrategy` allows.',
        hint: 'give a duration such as 1m',
      } satisfies OptionMeta),
  })
  .superRefine((options, context) => {
    if (typeof options.startingOffsets === 'object' && 'committed' in options.startingOffsets && options.groupId === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['startingOffsets'],
        message: 'kafkaSource startingOffsets { committed } needs a groupId',
        params: { hint: 'pass groupId to kafkaSource, or start from earliest or latest' } satisfies ProblemParams,
      });
    }
  });

/** The source's options once validated: defaults applied, durations in milliseconds. */
export type ParsedKafkaSourceOptions<T> = Omit<z.output<typeof kafkaSourceOptionsSchema>, 'deserializer'> & { deserializer: (record: TopicRecord) => T };

/** Validates kafkaSource's options: one clear error (INVALID_SOURCE, or the code of a bad duration or bootstrap) naming each bad setting and its fix. */
export function parseKafkaSourceOptions<T>(options: KafkaSourceOptions<T>): ParsedKafkaSourceOptions<T> {
  return parseConnectorOptions(kafkaSourceOptionsSchema, options, 'kafkaSource', 'INVALID_SOURCE') as ParsedKafkaSourceOptions<T>;
}

// The interface above and the schema must agree; typecheck fails when they drift.
export type KafkaSourceOptionsMatchSchema = Same<KafkaSourceOptions<unknown>, z.input<typeof kafkaSourceOptionsSchema>> extends true ? true : never;
const sourceOptionsMatch: KafkaSourceOptionsMatchSchema = true;
void sourceOptionsMatch;
