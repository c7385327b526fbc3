import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import type { DeliveryGuarantee } from '../../core/connector/sink.ts';
import { durationOption, functionOption, type OptionMeta, parseConnectorOptions, type Same } from '../connector-options.ts';
import { bootstrapOption, connectionOption } from './kafka-connection-options.ts';

/** One record to write. Strings are written as UTF-8. */
export interface KafkaProducerRecord {
  /** Default: the sink's topic. */
  topic?: string;
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string | Buffer>;
  /** Default: the partitioner's choice. */
  partition?: number;
  timestamp?: number;
}

/**
 * The options of `kafkaSink`. They are validated by the zod schema below (which also documents
 * them in docs/configuration.md); the two must agree, and the typecheck says so when they do not.
 */
export interface KafkaSinkOptions<T> {
  /** host:port list; default KAFKA_BROKERS. */
  bootstrap?: string | string[];
  /** The topic of records whose serializer names none. */
  topic?: string;
  serializer: (record: T) => KafkaProducerRecord;
  deliveryGuarantee: DeliveryGuarantee;
  /**
   * Prefix of the transactional ids (exactly-once). Default `weir-<job name>-<sink uid>`: stable
   * across restarts of the same job, distinct between jobs and sinks. Two running jobs must never
   * share a prefix.
   */
  transactionalIdPrefix?: string;
  /**
   * The transactions' transaction.timeout.ms: at most the brokers' transaction.max.timeout.ms, and
   * longer than a checkpoint plus a recovery (the preflight checks both). Default 15 minutes.
   */
  transactionTimeout?: number | string;
  /**
   * The longest you expect between a crash and the restarted job committing, beyond the restart
   * strategy's delay: restarting the process, start-up. Part of the preflight's transaction timeout
   * check. Default 1 minute.
   */
  recoveryBudget?: number | string;
  /**
   * How long a request is retried while brokers are unreachable or answer with a retriable error
   * (a broker restarting, a leader or coordinator moving) before the task fails. Default 1 minute.
   */
  retryTimeout?: number | string;
  /** Picks a partition for a record without one; default: murmur2 of the key (as Kafka's Java client), round-robin without a key. */
  partitioner?: (key: Buffer | null, partitions: number) => number;
  /** TLS and SASL options passed to every connection. */
  connection?: ConnectionOptions;
}

/** The sink's transaction.timeout.ms when it sets none: Kafka's default transaction.max.timeout.ms. */
export const DEFAULT_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000;
export const DEFAULT_RECOVERY_BUDGET_MS = 60 * 1000;
/** How long the connectors retry requests while brokers are unreachable, unless set. */
export const DEFAULT_RETRY_TIMEOUT_MS = 60 * 1000;

/**
 * The Kafka sink's options as a zod schema: validated once when `kafkaSink(...)` is called, and
 * the source of the sink's table in docs/configuration.md (scripts/gen-config-reference.ts).
 */
export const kafkaSinkOptionsSchema = z.strictObject({
  bootstrap: bootstrapOption('kafkaSink'),
  topic: z
    .string()
    .min(1)
    .optional()
    .meta({
      description: 'The topic of records whose serializer names none.',
      hint: 'give a topic name, or return a topic from the serializer',
      defaultText: 'none',
    } satisfies OptionMeta),
  serializer: functionOption<(record: never) => KafkaProducerRecord>('(record) => ({ topic?, key?, value, headers?, partition?, timestamp? })').meta({
    description:
      "Turns the job's record into a Kafka record `{ topic?, key?, value, headers?, partition?, timestamp? }`; strings are written as UTF-8, `topic` defaults to the `topic` option and `partition` to the partitioner's choice.",
    hint: 'pass serializer: (record) => ({ key, value: JSON.stringify(record) })',
    typeText: '(record: T) => KafkaProducerRecord',
  } satisfies OptionMeta),
  deliveryGuarantee: z.enum(['exactly-once', 'at-least-once', 'none']).meta({
    description:
      "`'exactly-once'`: a two-phase-commit sink, one Kafka transaction per subtask per checkpoint, committed when the checkpoint completes (readers must use read_committed). " +
      "`'at-least-once'`: every record is acknowledged by all in-sync replicas before the barrier passes; a replay after a failure writes duplicates. `'none'`: sends without waiting.",
    hint: "use 'exactly-once' (with checkpointing on), 'at-least-once' or 'none'",
  } satisfies OptionMeta),
  transactionalIdPrefix: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, {
      error: (issue) => `kafkaSink transactionalIdPrefix "${String(issue.input)}" has characters other than letters, digits, ".", "_" and "-"`,
    })
    .optional()
    .meta({
      description:
        'Exactly-once: the prefix of the transactional ids, `<prefix>-<subtask>-<slot>`. It must stay the same across restarts and upgrades of the job (a restart aborts the lingering transactions under it), and two running jobs must never share one.',
      hint: 'choose a prefix of letters, digits, ".", "_" and "-"',
      defaultText: '`weir-<job name>-<sink uid>`',
    } satisfies OptionMeta),
  transactionTimeout: durationOption('kafkaSink transactionTimeout')
    .refine((value) => value > 0, 'must be above 0')
    .default(DEFAULT_TRANSACTION_TIMEOUT_MS)
    .meta({
      description:
        "Exactly-once: the transactions' `transaction.timeout.ms`. The preflight requires it within the brokers' `transaction.max.timeout.ms` and above `(tolerableFailures + 1) x (interval + checkpoint timeout) + the longest restart delay + recoveryBudget`.",
      hint: "give a duration such as 15m: at most the brokers' transaction.max.timeout.ms",
    } satisfies OptionMeta),
  recoveryBudget: durationOption('kafkaSink recoveryBudget')
    .default(DEFAULT_RECOVERY_BUDGET_MS)
    .meta({
      description:
        "Exactly-once: the longest you expect between a crash and the restarted job committing, beyond the restart strategy's delay (restarting the process, start-up). Part of the preflight's transaction timeout check.",
      hint: 'give a duration such as 1m',
    } satisfies OptionMeta),
  retryTimeout: durationOption('kafkaSink retryTimeout')
    .default(DEFAULT_RETRY_TIMEOUT_MS)
    .meta({
      description:
        'How long a request is retried, with backoff, while brokers are unreachable (a broker restarting: the connection closed or refused) or answer with a retriable error (a leader or coordinator moving, NOT_ENOUGH_REPLICAS, a timeout) before the task fails and the job restarts as `restartStrategy` allows. Retried writes keep their producer id, epoch and sequence numbers, so the broker drops what it already has.',
      hint: 'give a duration such as 1m',
    } satisfies OptionMeta),
  partitioner: functionOption<(key: Buffer | null, partitions: number) => number>('(key, partitions) => partition')
    .optional()
    .meta({
      description: 'Picks the partition of a record whose serializer names none.',
      hint: 'pass partitioner: (key, partitions) => a partition number from 0 to partitions - 1',
      typeText: '(key: Buffer | null, partitions: number) => number',
      defaultText: "murmur2 of the key, as Kafka's Java client; round-robin without a key",
    } satisfies OptionMeta),
  connection: connectionOption(),
});

/** The sink's options once validated: defaults applied, durations in milliseconds. */
export type ParsedKafkaSinkOptions<T> = Omit<KafkaSinkOptions<T>, 'transactionTimeout' | 'recoveryBudget' | 'retryTimeout'> & {
  transactionTimeout: number;
  recoveryBudget: number;
  retryTimeout: number;
};

/** Validates kafkaSink's options: one clear error (INVALID_SINK, or the code of a bad duration or bootstrap) naming each bad setting and its fix. */
export function parseKafkaSinkOptions<T>(options: KafkaSinkOptions<T>): ParsedKafkaSinkOptions<T> {
  return parseConnectorOptions(kafkaSinkOptionsSchema, options, 'kafkaSink', 'INVALID_SINK') as ParsedKafkaSinkOptions<T>;
}

// The interface above and the schema must agree; typecheck fails when they drift.
type SinkInput = z.input<typeof kafkaSinkOptionsSchema>;
export type KafkaSinkOptionsMatchSchema =
  Same<Omit<KafkaSinkOptions<never>, 'serializer'>, Omit<SinkInput, 'serializer'>> extends true
    ? Same<KafkaSinkOptions<never>['serializer'], SinkInput['serializer']> extends true
      ? true
      : never
    : never;
const sinkOptionsMatch: KafkaSinkOptionsMatchSchema = true;
void sinkOptionsMatch;
