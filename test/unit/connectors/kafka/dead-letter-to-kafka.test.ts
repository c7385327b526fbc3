import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deadLetterToKafka } from '../../../../src/connectors/kafka/dead-letter-to-kafka.ts';
import type { DeadLetterRecord } from '../../../../src/core/functions/dead-letter.ts';

const letter = (timestamp: number): DeadLetterRecord => ({
  topic: 'dlq',
  key: Buffer.from('k'),
  value: Buffer.from('not json'),
  headers: [[Buffer.from('origin'), Buffer.from('h')]],
  origin: { topic: 'in', partition: 1, offset: 7n },
  timestamp,
  operatorUid: 'parse',
  operatorName: 'parse',
  errorClass: 'SyntaxError',
  errorMessage: 'bad',
});

test("a dead letter's record has no timestamp of its own (stamped when written, so the topic's retention counts from then); the original's is a header", () => {
  // A record of 2020: with its own timestamp, the broker's next retention check would delete the dead letter.
  const old = Date.UTC(2020, 0, 1);
  const record = deadLetterToKafka(letter(old));
  assert.equal(record.timestamp, undefined);
  assert.equal(record.headers?.['weir.dlq.timestamp'], String(old));
  assert.equal(record.headers?.origin?.toString(), 'h');
  assert.equal(record.headers?.['weir.dlq.offset'], '7');
  const none = deadLetterToKafka(letter(Number.NaN));
  assert.equal(none.timestamp, undefined);
  assert.equal(none.headers?.['weir.dlq.timestamp'], undefined);
});
