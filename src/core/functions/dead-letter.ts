/**
 * Dead letters: the records an error policy (`onDeserializationError` of a source, `onError` of an
 * operator) sends to a dead-letter topic instead of failing the job (Kafka Streams' dead letter
 * queue). They travel as a side output of the source or operator, under {@link DEAD_LETTER_TAG},
 * into the second input of the job's exactly-once Kafka sink (so they are written in the same
 * transactions as the output), or to a dead-letter sink of their own.
 */

/** The side output dead letters go to. */
export const DEAD_LETTER_TAG = '__weir.dead-letters';

/** The version of the dead-letter headers (`weir.dlq.version`). */
export const DEAD_LETTER_FORMAT_VERSION = 1;

/** What a policy does with a record its deserializer or function failed on: Kafka Streams' LogAndFail, LogAndContinue, or a dead-letter topic. */
export type RecordErrorPolicy = 'fail' | 'skip' | { deadLetterTopic: string };

/** A record that could not be read or processed, with where it came from and why it failed. */
export interface DeadLetterRecord {
  /** The dead-letter topic it goes to. */
  topic: string;
  /** The record's bytes: a Kafka record's own key and value; for an operator's record, its value as JSON (or its own bytes or text). */
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** The Kafka record's own headers (a source's dead letters). */
  headers: [Uint8Array | null, Uint8Array | null][];
  /** Where the record was read, when known (a Kafka source's records). */
  origin: { topic: string; partition: number; offset: bigint } | undefined;
  /** The record's timestamp (Kafka's, or its event time), NaN when it has none. */
  timestamp: number;
  /** The uid and name of the source or operator that failed on it. */
  operatorUid: string;
  operatorName: string;
  errorClass: string;
  /** The error's message, at most {@link MAX_ERROR_MESSAGE} characters. */
  errorMessage: string;
}

export const MAX_ERROR_MESSAGE = 1000;
const PREVIEW_BYTES = 64;

/** An error's class and message (truncated), for a dead letter. */
export function describeError(error: unknown): { errorClass: string; errorMessage: string } {
  const errorClass = error instanceof Error ? error.name || error.constructor.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  return { errorClass, errorMessage: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE)}...` : message };
}

/** The start of some bytes, bounded, as an error shows them: their length, the first 64 bytes in hex, and as text with unprintable bytes as dots. */
export function previewBytes(bytes: Uint8Array | null): string {
  if (bytes === null) return 'null';
  const head = bytes.subarray(0, PREVIEW_BYTES);
  const hex = Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('hex');
  let text = '';
  for (const byte of head) text += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : '.';
  const more = bytes.length > PREVIEW_BYTES ? '...' : '';
  return `${bytes.length} bytes, hex ${hex}${more}, text ${JSON.stringify(text)}${more}`;
}

/** An operator's record as bytes for a dead letter: bytes as they are, text as UTF-8, anything else as JSON (or its String() when JSON cannot say it). */
export function recordBytes(record: unknown): Uint8Array | null {
  if (record === null || record === undefined) return null;
  if (record instanceof Uint8Array) return record;
  if (typeof record === 'string') return Buffer.from(record, 'utf8');
  try {
    const json = JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
    return Buffer.from(json ?? String(record), 'utf8');
  } catch {
    return Buffer.from(String(record), 'utf8');
  }
}
