import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { type DataGenRecord, dataGenSource } from '../../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../../src/connectors/discarding-sink.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { OutputTag } from '../../../src/core/functions/output-tag.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

const config = parseEnvironmentConfig({ parallelism: 2 });

test('forward edges of equal parallelism chain; keyBy and a change of parallelism do not', () => {
  const env = new StreamExecutionEnvironment();
  env
    .fromSource(dataGenSource({ count: 10 }), { uid: 'gen' })
    .map((record) => record)
    .filter(() => true)
    .keyBy((record) => record.key)
    .reduce((a) => a, { uid: 'reduce' })
    .map((record) => record.seq, { parallelism: 1 })
    .sinkTo(discardingSink<number>(), { uid: 'sink', parallelism: 1 });
  const graph = buildJobGraph('test', env.graph, config);
  assert.deepEqual(
    graph.vertices.map((vertex) => [vertex.name, vertex.parallelism, vertex.keyed]),
    [
      ['datagen -> map -> filter', 2, false],
      ['reduce', 2, true],
      ['map -> discarding sink', 1, false],
    ],
  );
  assert.deepEqual(
    graph.edges.map((edge) => [edge.source, edge.target, edge.partitioning]),
    [
      [0, 1, 'hash'],
      [1, 2, 'rebalance'],
    ],
  );
});

test('operators without a uid get one from their position; duplicate uids are refused', () => {
  const env = new StreamExecutionEnvironment();
  env.fromSource(dataGenSource({ count: 10 }), { uid: 'same' }).sinkTo(discardingSink(), { uid: 'same' });
  assert.throws(() => buildJobGraph('test', env.graph, config), /have the same uid "same"/);

  const other = new StreamExecutionEnvironment();
  other
    .fromSource(dataGenSource({ count: 10 }))
    .map((record) => record)
    .sinkTo(discardingSink());
  assert.deepEqual(
    buildJobGraph('test', other.graph, config).nodes.map((node) => node.uid),
    ['source-0', 'map-1', 'sink-2'],
  );
});

test('a job without a source, and an operator above maxParallelism, are refused', () => {
  assert.throws(() => buildJobGraph('empty', new StreamExecutionEnvironment().graph, config), /job "empty" has no source/);
  const env = new StreamExecutionEnvironment();
  env.fromSource(dataGenSource({ count: 10 }), { parallelism: 500 }).sinkTo(discardingSink());
  assert.throws(() => buildJobGraph('big', env.graph, config), /maxParallelism/);
});

test('a two-input operator (connect) is its own vertex, keyed when both inputs are; its edges say which input they feed', () => {
  const env = new StreamExecutionEnvironment();
  const orders = env.fromSource(dataGenSource({ count: 10 }), { uid: 'orders' });
  const payments = env.fromSource(dataGenSource({ count: 10 }), { uid: 'payments' });
  orders
    .connect(payments)
    .keyBy(
      (order) => order.key,
      (payment) => payment.key,
    )
    .process<string>({ processElement1() {}, processElement2() {} }, { uid: 'match' })
    .sinkTo(discardingSink<string>(), { uid: 'sink' });
  const graph = buildJobGraph('test', env.graph, config);
  assert.deepEqual(
    graph.vertices.map((vertex) => [vertex.name, vertex.keyed]),
    [
      ['datagen', false],
      ['datagen', false],
      ['co-process -> discarding sink', true],
    ],
  );
  assert.deepEqual(
    graph.edges.map((edge) => [edge.source, edge.target, edge.partitioning, edge.inputIndex]),
    [
      [0, 2, 'hash', 0],
      [1, 2, 'hash', 1],
    ],
  );
});

test('a side output is never chained: its edge leaves the operator that emits it and names the tag', () => {
  const env = new StreamExecutionEnvironment();
  const rejected = new OutputTag<DataGenRecord>('rejected');
  const accepted = env.fromSource(dataGenSource({ count: 10 }), { uid: 'gen' }).process<DataGenRecord>(
    {
      processElement(record, context, out) {
        if (record.amount > 5) context.output(rejected, record);
        else out.collect(record);
      },
    },
    { uid: 'check' },
  );
  accepted.sinkTo(discardingSink(), { uid: 'accepted' });
  accepted.getSideOutput(rejected).sinkTo(discardingSink(), { uid: 'rejected' });
  const graph = buildJobGraph('test', env.graph, config);
  assert.deepEqual(
    graph.vertices.map((vertex) => vertex.name),
    ['datagen -> process', 'discarding sink', 'discarding sink'],
  );
  assert.deepEqual(
    graph.edges.map((edge) => [edge.source, edge.target, edge.partitioning, edge.outputTag]),
    [
      [0, 1, 'forward', undefined],
      [0, 2, 'forward', 'rejected'],
    ],
  );
});

test('a uid ending in the channel-state suffix is refused (it would collide with an unaligned checkpoint’s in-flight records)', () => {
  const env = new StreamExecutionEnvironment();
  env.fromSource(dataGenSource({ count: 10 }), { uid: 'gen' }).sinkTo(discardingSink<DataGenRecord>(), { uid: 'out#channel-state' });
  assert.throws(
    () => buildJobGraph('test', env.graph, config),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'INVALID_UID');
      assert.match(error.message, /"out#channel-state".*#channel-state/);
      return true;
    },
  );
});
