import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatBootstrap, parseBootstrap } from '../../../../src/connectors/kafka/bootstrap.ts';

test('parses host:port lists, IPv6 in brackets too', () => {
  const brokers = parseBootstrap(' 127.0.0.1:9092, kafka-2:19092 ,[::1]:9093', 'KAFKA_BROKERS');
  assert.deepEqual(brokers, [
    { host: '127.0.0.1', port: 9092 },
    { host: 'kafka-2', port: 19092 },
    { host: '::1', port: 9093 },
  ]);
  assert.equal(formatBootstrap(brokers), '127.0.0.1:9092,kafka-2:19092,[::1]:9093');
});

test('rejects an empty list and entries without a valid port, naming the setting', () => {
  assert.throws(() => parseBootstrap('', 'KAFKA_BROKERS'), /KAFKA_BROKERS is empty/);
  assert.throws(() => parseBootstrap('localhost', 'KAFKA_BROKERS'), /KAFKA_BROKERS: "localhost" is not host:port/);
  assert.throws(() => parseBootstrap('h:70000', '--brokers'), /--brokers: "h:70000"/);
});
