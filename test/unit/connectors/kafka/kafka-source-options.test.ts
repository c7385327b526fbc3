import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kafkaDeserializers } from '../../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSource } from '../../../../src/connectors/kafka/kafka-source.ts';
import { parseKafkaSourceOptions } from '../../../../src/connectors/kafka/kafka-source-options.ts';
import type { ErrorCode } from '../../../../src/core/errors/error-code.ts';
import { clearWeirError } from '../../../harness/weir-error.ts';

const valid = { topics: ['orders'], deserializer: kafkaDeserializers.string };

/** The options must fail with this code, a message matching `pattern` (one line) and a hint matching `hint`. */
function fails(options: Record<string, unknown>, code: ErrorCode, pattern: RegExp, hint?: RegExp) {
  assert.throws(() => parseKafkaSourceOptions(options as never), clearWeirError(code, pattern, hint));
}

test('defaults: earliest, read_committed, 100 ms fetch wait, 1 MiB per partition, discovery every 30 s', () => {
  const options = parseKafkaSourceOptions(valid);
  assert.equal(options.startingOffsets, 'earliest');
  assert.equal(options.isolation, 'read_committed');
  assert.equal(options.bounded, false);
  assert.equal(options.maxWaitMs, 100);
  assert.equal(options.maxBytesPerPartition, 1024 * 1024);
  assert.equal(options.partitionDiscoveryInterval, 30_000);
  assert.equal(options.deserializer, kafkaDeserializers.string, 'functions are kept as given');
});

test('good values are kept, durations in milliseconds', () => {
  const pattern = /^orders-/;
  const options = parseKafkaSourceOptions({
    ...valid,
    topics: pattern,
    bootstrap: ['127.0.0.1:9092', 'broker-2:9093'],
    startingOffsets: { offsets: { 'orders:0': 5n, 'orders:1': 7 }, fallback: 'latest' },
    partitionDiscoveryInterval: '1m',
    groupId: 'monitor',
    connection: { sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } },
  });
  assert.equal(options.topics, pattern);
  assert.equal(options.partitionDiscoveryInterval, 60_000);
  assert.deepEqual(options.startingOffsets, { offsets: { 'orders:0': 5n, 'orders:1': 7 }, fallback: 'latest' });
  assert.deepEqual(parseKafkaSourceOptions({ ...valid, startingOffsets: { committed: { fallback: 'latest' } }, groupId: 'g' }).startingOffsets, {
    committed: { fallback: 'latest' },
  });
  assert.deepEqual(parseKafkaSourceOptions({ ...valid, startingOffsets: { timestamp: 1_767_225_600_000 } }).startingOffsets, { timestamp: 1_767_225_600_000 });
});

test('topics: none, an empty name or the wrong type', () => {
  fails(
    { ...valid, topics: [] },
    'INVALID_SOURCE',
    /^kafkaSource needs at least one topic$/,
    /pass topics: \["name", \.\.\.\] or a pattern such as \/\^orders-\//,
  );
  fails({ ...valid, topics: ['orders', ''] }, 'INVALID_SOURCE', /^kafkaSource topics\[1\]: must not be empty$/);
  fails({ ...valid, topics: 'orders' }, 'INVALID_SOURCE', /^kafkaSource topics: must be an array of topic names or a RegExp$/);
  fails({ deserializer: kafkaDeserializers.string }, 'INVALID_SOURCE', /^kafkaSource topics: must be an array of topic names or a RegExp$/);
});

test('deserializer: missing or not a function', () => {
  fails({ topics: ['orders'] }, 'INVALID_SOURCE', /^kafkaSource deserializer: is required: a function \(record\) => T$/, /kafkaDeserializers\.json/);
  fails({ ...valid, deserializer: 'json' }, 'INVALID_SOURCE', /^kafkaSource deserializer: must be a function \(record\) => T, not "json"$/);
});

test('startingOffsets: unknown forms, bad offsets and timestamps, committed without a groupId', () => {
  fails(
    { ...valid, startingOffsets: 'beginning' },
    'INVALID_SOURCE',
    /^kafkaSource startingOffsets: must be 'earliest', 'latest', \{ timestamp/,
    /\{ committed: \{ fallback \} \}/,
  );
  fails(
    { ...valid, startingOffsets: { offsets: { orders: 5 } } },
    'INVALID_SOURCE',
    /^kafkaSource startingOffsets\.offsets: the key "orders" is not "topic:partition"$/,
  );
  fails(
    { ...valid, startingOffsets: { offsets: { 'orders:0': -1 } } },
    'INVALID_SOURCE',
    /^kafkaSource startingOffsets\.offsets\.orders:0: must be at least 0, not -1$/,
  );
  fails({ ...valid, startingOffsets: { timestamp: 1.5 } }, 'INVALID_SOURCE', /^kafkaSource startingOffsets\.timestamp: must be a whole number$/);
  fails({ ...valid, startingOffsets: { timestamp: 5, fallback: 'latest' } }, 'INVALID_SOURCE', /^kafkaSource startingOffsets: unknown key "fallback"$/);
  fails(
    { ...valid, startingOffsets: { committed: { fallback: 'earliest' } } },
    'INVALID_SOURCE',
    /^kafkaSource startingOffsets \{ committed \} needs a groupId$/,
    /^pass groupId to kafkaSource, or start from earliest or latest$/,
  );
});

test('isolation, bounded and the fetch settings', () => {
  fails(
    { ...valid, isolation: 'read-committed' },
    'INVALID_SOURCE',
    /^kafkaSource isolation: must be 'read_committed' or 'read_uncommitted', not "read-committed"$/,
  );
  fails({ ...valid, bounded: 'yes' }, 'INVALID_SOURCE', /^kafkaSource bounded: must be a boolean, not "yes"$/);
  fails({ ...valid, maxWaitMs: -1 }, 'INVALID_SOURCE', /^kafkaSource maxWaitMs: must be at least 0, not -1$/);
  fails({ ...valid, maxBytesPerPartition: 1.5 }, 'INVALID_SOURCE', /^kafkaSource maxBytesPerPartition: must be a whole number, not 1\.5$/);
  fails({ ...valid, groupId: '' }, 'INVALID_SOURCE', /^kafkaSource groupId: must not be empty$/);
  fails({ ...valid, connection: 'tls' }, 'INVALID_SOURCE', /^kafkaSource connection: must be an object$/);
});

test('partitionDiscoveryInterval: a bad duration keeps the INVALID_DURATION code and message', () => {
  fails(
    { ...valid, partitionDiscoveryInterval: 'often' },
    'INVALID_DURATION',
    /^kafkaSource partitionDiscoveryInterval: "often" is not a duration$/,
    /for example 500ms, 10s, 15m or 1h/,
  );
  fails({ ...valid, partitionDiscoveryInterval: '-5s' }, 'INVALID_DURATION', /^kafkaSource partitionDiscoveryInterval: "-5s" is not a duration$/);
  fails({ ...valid, partitionDiscoveryInterval: true }, 'INVALID_SOURCE', /^kafkaSource partitionDiscoveryInterval: must be a duration/);
});

test('bootstrap: checked when the source is built, with the INVALID_BOOTSTRAP code', () => {
  fails({ ...valid, bootstrap: 'localhost' }, 'INVALID_BOOTSTRAP', /^kafkaSource bootstrap: "localhost" is not host:port$/, /127\.0\.0\.1:9092/);
  fails({ ...valid, bootstrap: ' , ' }, 'INVALID_BOOTSTRAP', /^kafkaSource bootstrap is empty$/);
  fails({ ...valid, bootstrap: 9092 }, 'INVALID_SOURCE', /^kafkaSource bootstrap: must be "host:port\[,host:port\.\.\.\]" or an array/);
});

test('unknown options, several problems at once, and no options at all', () => {
  fails(
    { ...valid, partitionDiscoveryIntervalMs: 5 },
    'INVALID_SOURCE',
    /^kafkaSource has no option "partitionDiscoveryIntervalMs"$/,
    /the options are bootstrap, topics/,
  );
  fails(
    { ...valid, maxWaitMs: -1, isolation: 'none' },
    'INVALID_SOURCE',
    /^kafkaSource isolation: must be .*; kafkaSource maxWaitMs: must be at least 0, not -1$/,
    /read_committed.*; give a whole number of milliseconds/,
  );
  assert.throws(() => parseKafkaSourceOptions(undefined as never), clearWeirError('INVALID_SOURCE', /^kafkaSource needs an options object/));
});

test('kafkaSource validates its options when it is called', () => {
  assert.throws(
    () => kafkaSource({ topics: [], deserializer: kafkaDeserializers.string }),
    clearWeirError('INVALID_SOURCE', /^kafkaSource needs at least one topic$/),
  );
  const source = kafkaSource({ ...valid, bounded: true });
  assert.equal(source.bounded, true);
});
