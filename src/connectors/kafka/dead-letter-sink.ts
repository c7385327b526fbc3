import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import type { DeadLetterRoute } from '../../core/connector/dead-letter-route.ts';
import type { Preflightable } from '../../core/connector/preflight.ts';
import type { DeliveryGuarantee, Sink } from '../../core/connector/sink.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { DeadLetterRecord, RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { OptionMeta } from '../connector-options.ts';
import { deadLetterToKafka } from './dead-letter-to-kafka.ts';
import { bootstrapOption, connectionOption } from './kafka-connection-options.ts';
import { kafkaSink } from './kafka-sink.ts';

/** Where dead letters go: a Kafka topic, written exactly-once by default (in step with the job's checkpoints). */
export interface DeadLetterTopic {
  topic: string;
  /** host:port list; default: the source's bootstrap (for a source's dead letters), else KAFKA_BROKERS. */
  bootstrap?: string | string[];
  /** TLS and SASL; default: the source's (for a source's dead letters). */
  connection?: ConnectionOptions;
  /** Default 'exactly-once': pre-committed at the same barrier and committed at the same checkpoint as the job's output. */
  deliveryGuarantee?: DeliveryGuarantee;
  /** Default `weir-<job name>-<dead-letter sink uid>`. */
  transactionalIdPrefix?: string;
  /**
   * The uid of the job's exactly-once Kafka sink whose transactions the dead letters join. Default:
   * the job's exactly-once Kafka sink when it has exactly one (and this policy sets no bootstrap,
   * connection, deliveryGuarantee or transactionalIdPrefix of its own); otherwise the dead letters
   * get an exactly-once sink of their own, committed at the same checkpoints.
   */
  sink?: string;
}

/** What a source or operator does with a record it fails on: 'fail' (the default), 'skip' (count and drop it), or a dead-letter topic. */
export type OnRecordError = 'fail' | 'skip' | { deadLetter: DeadLetterTopic };

/** The error policy's schema, for the options of a source (`onDeserializationError`) and for operators (`onError`). */
export function onRecordErrorSchema(setting: string) {
  return z
    .union(
      [
        z.literal('fail'),
        z.literal('skip'),
        z.strictObject({
          deadLetter: z.strictObject({
            topic: z.string().min(1),
            bootstrap: bootstrapOption(`${setting} deadLetter`),
            connection: connectionOption(),
            deliveryGuarantee: z.enum(['exactly-once', 'at-least-once', 'none']).optional(),
            transactionalIdPrefix: z
              .string()
              .regex(/^[A-Za-z0-9._-]+$/)
              .optional(),
            sink: z.string().min(1).optional(),
          }),
        }),
      ],
      { error: `must be 'fail', 'skip' or { deadLetter: { topic, sink?, bootstrap?, connection?, deliveryGuarantee?, transactionalIdPrefix? } }` },
    )
    .default('fail');
}

export const onDeserializationErrorMeta = {
  description:
    "What a record the deserializer throws on does (Kafka Streams' DeserializationExceptionHandler). `'fail'`: the job fails with an error naming topic, partition, offset and the start of the record's bytes. " +
    "`'skip'` (LogAndContinue): the record is dropped, counted in `recordsSkipped` (and the first one logged). `{ deadLetter: { topic } }`: the record's key, value and headers go to that topic with headers saying where it came from and why it failed (`weir.dlq.*`), counted in `deadLetters`; " +
    "written in the same transactions as the output of the job's exactly-once Kafka sink (the only one, or the one `sink` names, on its cluster), so read_committed output plus dead letters equals the input at every moment; " +
    'with bootstrap, connection, deliveryGuarantee or transactionalIdPrefix of its own (or no such sink) they get a sink of their own, exactly-once by default and committed at the same checkpoints.',
  hint: "use 'fail', 'skip' or { deadLetter: { topic: 'payments-dlq' } }",
  typeText: "'fail' | 'skip' | { deadLetter: { topic, sink?, bootstrap?, connection?, deliveryGuarantee?, transactionalIdPrefix? } }",
} satisfies OptionMeta;

/** The runtime's policy for an option's value. */
export function recordErrorPolicy(option: OnRecordError | undefined): RecordErrorPolicy {
  return option === undefined || option === 'fail' ? 'fail' : option === 'skip' ? 'skip' : { deadLetterTopic: option.deadLetter.topic };
}

/**
 * Where a dead-letter policy's records go: into the transactions of the job's exactly-once Kafka
 * sink (the one `sink` names, or the only one), unless the policy has settings of its own; else
 * to their own sink.
 */
export function deadLetterRoute(
  target: DeadLetterTopic,
  defaults: { bootstrap?: string | string[] | undefined; connection?: ConnectionOptions | undefined } = {},
): DeadLetterRoute {
  const ownSettings = (['bootstrap', 'connection', 'deliveryGuarantee', 'transactionalIdPrefix'] as const).filter((name) => target[name] !== undefined);
  if (target.sink !== undefined && ownSettings.length > 0) {
    throw new WeirError(
      'INVALID_CONFIG',
      `deadLetter (topic "${target.topic}"): sink "${target.sink}" joins that sink's transactions, so ${ownSettings.join(', ')} cannot be set beside it`,
      { hint: `drop ${ownSettings.join(', ')} (the sink's own settings apply), or drop sink to give the dead letters a sink of their own` },
    );
  }
  return { topic: target.topic, joinSink: ownSettings.length > 0 ? false : target.sink, ownSink: deadLetterSink(target, defaults) };
}

/** The sink a dead-letter policy writes to: a Kafka sink into its topic (exactly-once unless it says otherwise). */
export function deadLetterSink(
  target: DeadLetterTopic,
  defaults: { bootstrap?: string | string[] | undefined; connection?: ConnectionOptions | undefined } = {},
): Sink<DeadLetterRecord> & Preflightable {
  const bootstrap = target.bootstrap ?? defaults.bootstrap;
  const connection = target.connection ?? defaults.connection;
  const sink = kafkaSink<DeadLetterRecord>({
    topic: target.topic,
    serializer: deadLetterToKafka,
    deliveryGuarantee: target.deliveryGuarantee ?? 'exactly-once',
    ...(bootstrap === undefined ? {} : { bootstrap }),
    ...(connection === undefined ? {} : { connection }),
    ...(target.transactionalIdPrefix === undefined ? {} : { transactionalIdPrefix: target.transactionalIdPrefix }),
  });
  return { ...sink, name: `dead letters (${target.topic})` };
}
