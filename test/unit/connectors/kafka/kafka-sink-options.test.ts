import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RECOVERY_BUDGET_MS, DEFAULT_TRANSACTION_TIMEOUT_MS, parseKafkaSinkOptions } from '../../../../src/connectors/kafka/kafka-sink-options.ts';
import type { ErrorCode } from '../../../../src/core/errors/error-code.ts';
import { clearWeirError } from '../../../harness/weir-error.ts';

const serializer = (record: { id: string }) => ({ key: record.id, value: JSON.stringify(record) });
const valid = { serializer, deliveryGuarantee: 'exactly-once' as const };

/** The options must fail with this code, a message matching `pattern` (one line) and a hint matching `hint`. */
function fails(options: Record<string, unknown>, code: ErrorCode, pattern: RegExp, hint?: RegExp) {
  assert.throws(() => parseKafkaSinkOptions(options as never), clearWeirError(code, pattern, hint));
}

test('defaults: a 15 minute transaction timeout and a 1 minute recovery budget, in milliseconds', () => {
  const options = parseKafkaSinkOptions(valid);
  assert.equal(options.transactionTimeout, DEFAULT_TRANSACTION_TIMEOUT_MS);
  assert.equal(options.transactionTimeout, 15 * 60 * 1000);
  assert.equal(options.recoveryBudget, DEFAULT_RECOVERY_BUDGET_MS);
  assert.equal(options.serializer, serializer, 'functions are kept as given');
  assert.equal(options.transactionalIdPrefix, undefined);
});

test('good values are kept, durations in milliseconds', () => {
  const partitioner = () => 0;
  const options = parseKafkaSinkOptions({
    ...valid,
    topic: 'balances',
    bootstrap: '127.0.0.1:9092',
    transactionalIdPrefix: 'balances.v2_eu-1',
    transactionTimeout: '5m',
    recoveryBudget: 3000,
    partitioner,
  });
  assert.equal(options.transactionTimeout, 300_000);
  assert.equal(options.recoveryBudget, 3000);
  assert.equal(options.partitioner, partitioner);
  assert.equal(options.transactionalIdPrefix, 'balances.v2_eu-1');
  for (const deliveryGuarantee of ['exactly-once', 'at-least-once', 'none'] as const) {
    assert.equal(parseKafkaSinkOptions({ serializer, deliveryGuarantee }).deliveryGuarantee, deliveryGuarantee);
  }
});

test('deliveryGuarantee: missing or misspelt is refused, never taken for another guarantee', () => {
  fails(
    { ...valid, deliveryGuarantee: 'exactly_once' },
    'INVALID_SINK',
    /^kafkaSink deliveryGuarantee: must be 'exactly-once', 'at-least-once' or 'none', not "exactly_once"$/,
    /use 'exactly-once'/,
  );
  fails({ serializer }, 'INVALID_SINK', /^kafkaSink deliveryGuarantee: is required: 'exactly-once', 'at-least-once' or 'none'$/);
});

test('serializer and partitioner must be functions', () => {
  fails({ deliveryGuarantee: 'exactly-once' }, 'INVALID_SINK', /^kafkaSink serializer: is required: a function \(record\) => \(\{ topic\?, key\?, value/);
  fails({ ...valid, serializer: 'json' }, 'INVALID_SINK', /^kafkaSink serializer: must be a function .*, not "json"$/);
  fails({ ...valid, partitioner: 'murmur2' }, 'INVALID_SINK', /^kafkaSink partitioner: must be a function \(key, partitions\) => partition, not "murmur2"$/);
});

test('transactionTimeout and recoveryBudget: bad durations keep the INVALID_DURATION code and message', () => {
  fails(
    { ...valid, transactionTimeout: 'soon' },
    'INVALID_DURATION',
    /^kafkaSink transactionTimeout: "soon" is not a duration$/,
    /for example 500ms, 10s, 15m or 1h/,
  );
  fails({ ...valid, recoveryBudget: '-1s' }, 'INVALID_DURATION', /^kafkaSink recoveryBudget: "-1s" is not a duration$/);
  fails({ ...valid, transactionTimeout: 0 }, 'INVALID_SINK', /^kafkaSink transactionTimeout: must be above 0$/, /transaction\.max\.timeout\.ms/);
  fails({ ...valid, transactionTimeout: { minutes: 15 } }, 'INVALID_SINK', /^kafkaSink transactionTimeout: must be a duration/);
});

test('transactionalIdPrefix: the same message as before for characters Kafka ids should not have', () => {
  fails(
    { ...valid, transactionalIdPrefix: 'my job' },
    'INVALID_SINK',
    /^kafkaSink transactionalIdPrefix "my job" has characters other than letters, digits, "\.", "_" and "-"$/,
    /^choose a prefix of letters, digits, "\.", "_" and "-"$/,
  );
  fails({ ...valid, transactionalIdPrefix: '' }, 'INVALID_SINK', /^kafkaSink transactionalIdPrefix "" has characters other than/);
});

test('topic, bootstrap, connection, unknown options', () => {
  fails({ ...valid, topic: '' }, 'INVALID_SINK', /^kafkaSink topic: must not be empty$/);
  fails({ ...valid, topic: 42 }, 'INVALID_SINK', /^kafkaSink topic: must be a string, not 42$/);
  fails({ ...valid, bootstrap: 'kafka:port' }, 'INVALID_BOOTSTRAP', /^kafkaSink bootstrap: "kafka:port" is not host:port$/);
  fails({ ...valid, connection: [] }, 'INVALID_SINK', /^kafkaSink connection: must be an object$/);
  // The mechanism is checked now, and no error shows the password.
  fails(
    { ...valid, connection: { sasl: { mechanism: 'SCRAM-SHA-1', username: 'u', password: 'hunter2-secret' } } },
    'INVALID_SINK',
    /^kafkaSink connection\.sasl\.mechanism: sasl\.mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, not "SCRAM-SHA-1"$/,
  );
  fails({ ...valid, connection: { tls: 'yes' } }, 'INVALID_SINK', /^kafkaSink connection\.tls: tls must be an object/);
  fails({ ...valid, transactionTimeoutMs: 60_000 }, 'INVALID_SINK', /^kafkaSink has no option "transactionTimeoutMs"$/, /transactionTimeout/);
});
