import { DEAD_LETTER_FORMAT_VERSION, type DeadLetterRecord } from '../../core/functions/dead-letter.ts';
import type { KafkaProducerRecord } from './kafka-sink-options.ts';

const bytes = (value: Uint8Array | null): Buffer | null => (value === null ? null : Buffer.from(value.buffer, value.byteOffset, value.byteLength));

/**
 * A dead letter as a Kafka record: the original key and value bytes, the original headers, and
 * `weir.dlq.*` headers: version, source topic, partition, offset, timestamp (when known), the
 * operator's uid and name, the error's class and message (truncated). The record's own timestamp is
 * the time it is written.
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
  // No timestamp of its own: the producer stamps it when it is dead-lettered (as Kafka Connect's
  // dead letter queue does), so the topic's retention counts from then. With the original's, a
  // dead letter of a record older than the topic's retention.ms (old input, event time) was
  // deleted by the broker's next retention check, within minutes of its commit.
  return { topic: letter.topic, key: bytes(letter.key), value: bytes(letter.value), headers };
}
