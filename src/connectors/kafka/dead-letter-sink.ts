import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import type { Preflightable } from '../../core/connector/preflight.ts';
import type { DeliveryGuarantee, Sink } from '../../core/connector/sink.ts';
import { DEAD_LETTER_FORMAT_VERSION, type DeadLetterRecord, type RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { OptionMeta } from '../connector-options.ts';
import { bootstrapOption, connectionOption } from './kafka-connection-options.ts';
import { kafkaSink } from './kafka-sink.ts';
import type { KafkaProducerRecord } from './kafka-sink-options.ts';

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
          }),
        }),
      ],
      { error: `must be 'fail', 'skip' or { deadLetter: { topic, bootstrap?, connection?, deliveryGuarantee?, transactionalIdPrefix? } }` },
    )
    .default('fail');
}

export const onDeserializationErrorMeta = {
  description:
    "What a record the deserializer throws on does (Kafka Streams' DeserializationExceptionHandler). `'fail'`: the job fails with an error naming topic, partition, offset and the start of the record's bytes. " +
    "`'skip'` (LogAndContinue): the record is dropped, counted in `recordsSkipped` (and the first one logged). `{ deadLetter: { topic } }`: the record's key, value and headers go to that topic with headers saying where it came from and why it failed (`weir.dlq.*`), counted in `deadLetters`; " +
    "written exactly-once by default, committed with the job's checkpoints, so read_committed output plus dead letters equals the input.",
  hint: "use 'fail', 'skip' or { deadLetter: { topic: 'payments-dlq' } }",
  typeText: "'fail' | 'skip' | { deadLetter: { topic, bootstrap?, connection?, deliveryGuarantee?, transactionalIdPrefix? } }",
} satisfies OptionMeta;

/** The runtime's policy for an option's value. */
export function recordErrorPolicy(option: OnRecordError | undefined): RecordErrorPolicy {
  return option === undefined || option === 'fail' ? 'fail' : option === 'skip' ? 'skip' : 'dead-letter';
}

const bytes = (value: Uint8Array | null): Buffer | null => (value === null ? null : Buffer.from(value.buffer, value.byteOffset, value.byteLength));

/**
 * A dead letter as a Kafka record: the original key and value bytes, the original headers, and
 * `weir.dlq.*` headers: version, source topic, partition, offset, timestamp (when known), the
 * operator's uid and name, the error's class and message (truncated).
 */
export function deadLetterToKafka(letter: DeadLetterRecord): KafkaProducerRecord {
  const headers: Record<string, string | Buffer> = {};
  for (const [name, value] of letter.headers) if (name !== null) headers[bytes(name)?.toString('utf8') ?? ''] = bytes(value) ?? '';
  headers['weir.dlq.version'] = String(DEAD_LETTER_FORMAT_VERSION);
  if (letter.origin !== undefined) {
    headers['weir.dlq.topic'] = letter.origin.topic;
    headers['weir.dlq.partition'] = String(letter.origin.partition);
    headers['weir.dlq.offset'] = String(letter.origin.offset);
  }
  if (!Number.isNaN(letter.timestamp)) headers['weir.dlq.timestamp'] = String(letter.timestamp);
  headers['weir.dlq.operator.uid'] = letter.operatorUid;
  headers['weir.dlq.operator.name'] = letter.operatorName;
  headers['weir.dlq.error.class'] = letter.errorClass;
  headers['weir.dlq.error.message'] = letter.errorMessage;
  return {
    key: bytes(letter.key),
    value: bytes(letter.value),
    headers,
    ...(Number.isNaN(letter.timestamp) || letter.timestamp < 0 ? {} : { timestamp: letter.timestamp }),
  };
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
