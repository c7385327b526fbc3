import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDeadLetters } from '../../../src/api/connect-dead-letters.ts';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import type { OnRecordError } from '../../../src/connectors/kafka/dead-letter-sink.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { DEAD_LETTER_TAG } from '../../../src/core/functions/dead-letter.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';

const config = parseEnvironmentConfig({ parallelism: 2 });
const bootstrap = '127.0.0.1:1';

/** Kafka in, a map, `sinks` exactly-once Kafka sinks out (uids out-0, out-1, ...); the source's and the map's dead letters by `policy`. */
function job(policy: (what: 'source' | 'map') => OnRecordError, sinks = 1): StreamExecutionEnvironment {
  const env = new StreamExecutionEnvironment();
  const mapped = env
    .fromSource(kafkaSource<{ seq: number }>({ bootstrap, topics: ['in'], deserializer: kafkaDeserializers.json, onDeserializationError: policy('source') }), {
      uid: 'input',
    })
    .map((record) => record.seq, { uid: 'check', onError: policy('map') });
  for (let i = 0; i < sinks; i++) {
    mapped.sinkTo(kafkaSink<number>({ bootstrap, topic: `out-${i}`, serializer: (seq) => ({ value: String(seq) }), deliveryGuarantee: 'exactly-once' }), {
      uid: `out-${i}`,
    });
  }
  return env;
}

test("dead letters join the transactions of the job's only exactly-once Kafka sink: its second input, no sink of their own", () => {
  const env = job((what) => ({ deadLetter: { topic: `${what}-dlq` } }));
  connectDeadLetters(env.graph);
  const nodes = env.graph.nodes.map((node) => [node.kind, node.uid]);
  assert.deepEqual(nodes, [
    ['source', 'input'],
    ['operator', 'check'],
    ['sink', 'out-0'],
  ]);
  assert.deepEqual(
    env.graph.edges.filter((edge) => edge.outputTag === DEAD_LETTER_TAG).map((edge) => [edge.source, edge.target, edge.inputIndex]),
    [
      [0, 2, 1],
      [1, 2, 1],
    ],
  );
  // The sink has a vertex of its own: three inputs never chain.
  const graph = buildJobGraph('test', env.graph, config);
  assert.deepEqual(
    graph.vertices.map((vertex) => vertex.name),
    ['kafka source (in)', 'map', 'kafka sink (out-0)'],
  );
  assert.deepEqual(
    graph.edges.map((edge) => [edge.source, edge.target, edge.inputIndex]),
    [
      [0, 1, 0],
      [1, 2, 0],
      [0, 2, 1],
      [1, 2, 1],
    ],
  );
});

test('dead letters get a sink of their own with settings of their own, beside several sinks, or without one that takes them', () => {
  const own = job(() => ({ deadLetter: { topic: 'dlq', deliveryGuarantee: 'at-least-once' } }));
  connectDeadLetters(own.graph);
  assert.deepEqual(
    own.graph.nodes.filter((node) => node.kind === 'sink').map((node) => node.uid),
    ['out-0', 'input-dead-letters', 'check-dead-letters'],
  );
  const several = job(() => ({ deadLetter: { topic: 'dlq' } }), 2);
  connectDeadLetters(several.graph);
  assert.equal(several.graph.nodes.filter((node) => node.kind === 'sink').length, 4);
  // Several: `sink` picks the one to join.
  const picked = job(() => ({ deadLetter: { topic: 'dlq', sink: 'out-1' } }), 2);
  connectDeadLetters(picked.graph);
  assert.deepEqual(
    picked.graph.edges.filter((edge) => edge.outputTag === DEAD_LETTER_TAG).map((edge) => picked.graph.node(edge.target).uid),
    ['out-1', 'out-1'],
  );
});

test('a deadLetter sink that names no exactly-once Kafka sink, or sits beside settings of its own, is refused', () => {
  const unknown = job(() => ({ deadLetter: { topic: 'dlq', sink: 'nope' } }));
  assert.throws(() => connectDeadLetters(unknown.graph), /deadLetter \(topic "dlq"\): sink "nope" is not the uid of an exactly-once Kafka sink of the job/);
  assert.throws(
    () => job(() => ({ deadLetter: { topic: 'dlq', sink: 'out-0', bootstrap: 'elsewhere:9092' } })),
    /sink "out-0" joins that sink's transactions, so bootstrap cannot be set beside it/,
  );
});
