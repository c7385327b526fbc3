import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BrokerOutage } from '../../../../src/connectors/kafka/broker-outage.ts';
import { lineLogger } from '../../../../src/core/logging/logger.ts';

test('an outage is said at once, again every 5 s while it lasts, and its end once', () => {
  const lines: string[] = [];
  const outage = new BrokerOutage('the kafka sink "out" (subtask 0)', () => lineLogger((line) => lines.push(line)));
  outage.recovered(0); // nothing to say: no outage
  outage.failed('127.0.0.1:9092', 'ECONNREFUSED', 60_000, 1_000);
  outage.failed('127.0.0.1:9092', 'ECONNREFUSED', 60_000, 3_000); // too soon to repeat
  outage.failed('127.0.0.1:9092', 'ECONNREFUSED', 60_000, 6_000);
  outage.recovered(8_000);
  outage.recovered(9_000);
  assert.deepEqual(lines, [
    'Kafka broker 127.0.0.1:9092 unreachable (ECONNREFUSED): the kafka sink "out" (subtask 0) is retrying, giving up in 59s',
    'Kafka broker 127.0.0.1:9092 still unreachable after 5s (ECONNREFUSED): the kafka sink "out" (subtask 0) waits for it, giving up in 54s',
    'Kafka reachable again after 7s: the kafka sink "out" (subtask 0) goes on',
  ]);
});
