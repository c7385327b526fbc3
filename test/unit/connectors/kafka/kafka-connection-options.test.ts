import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatBootstrap, parseBootstrap } from '../../../../src/connectors/kafka/kafka-connection-options.ts';
import { resolveKafkaConnection } from '../../../../src/connectors/kafka/kafka-default-connection.ts';
import { clearWeirError } from '../../../harness/weir-error.ts';

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

test("resolveKafkaConnection: the connector's bootstrap, else KAFKA_BROKERS, else one clear error", (context) => {
  const saved = process.env.KAFKA_BROKERS;
  context.after(() => {
    if (saved === undefined) delete process.env.KAFKA_BROKERS;
    else process.env.KAFKA_BROKERS = saved;
  });
  process.env.KAFKA_BROKERS = 'from-env:9092';
  assert.deepEqual(resolveKafkaConnection({ bootstrap: 'option:9093' }, 'kafkaSink').bootstrap, [{ host: 'option', port: 9093 }]);
  assert.deepEqual(resolveKafkaConnection({}, 'kafkaSink').bootstrap, [{ host: 'from-env', port: 9092 }]);
  assert.throws(
    () => resolveKafkaConnection({ bootstrap: 'nope' }, 'kafkaSink').bootstrap,
    clearWeirError('INVALID_BOOTSTRAP', /^kafkaSink bootstrap: "nope" is not host:port$/),
  );
  process.env.KAFKA_BROKERS = 'nope';
  assert.throws(
    () => resolveKafkaConnection({}, 'kafkaSink').bootstrap,
    clearWeirError('INVALID_BOOTSTRAP', /^bootstrap.servers \(from KAFKA_BROKERS\): "nope" is not host:port$/),
  );
  delete process.env.KAFKA_BROKERS;
  assert.throws(
    () => resolveKafkaConnection({}, 'weir verify --brokers').bootstrap,
    clearWeirError('NO_BOOTSTRAP', /^weir verify --brokers has no brokers: neither its bootstrap option nor KAFKA_BROKERS is set$/, /KAFKA_BROKERS/),
  );
});
