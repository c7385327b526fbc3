/** Issue 35, point 5: the formats and refusals of bounded input's end in cluster mode (bounded-input.test.ts runs it against the broker). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { everySourceBounded } from '../../../src/cluster/cluster-end-watch.ts';
import { decodeFrame, EXCHANGE_END_FRAME_VERSION, encodeEndFrame, encodeWatermarkFrame } from '../../../src/cluster/exchange-frames.ts';
import { decodeTaskCheckpoint, encodeTaskCheckpoint, TASK_CHECKPOINT_ENDED_VERSION, TASK_CHECKPOINT_VERSION } from '../../../src/cluster/task-checkpoint.ts';
import { taskCheckpointRecord } from '../../../src/cluster/task-checkpoint-record.ts';
import { kafkaDeserializers } from '../../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import type { TopicRecord } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const topicRecord = (value: Buffer): TopicRecord => ({ topic: 'x', partition: 3, offset: 7n, timestamp: 0n, key: null, value, headers: [], producerId: 1n });
const source = (bounded: boolean) =>
  kafkaSource<{ key: string; n: number }>({ bootstrap: '127.0.0.1:1', topics: ['in'], deserializer: kafkaDeserializers.json, bounded });

test('an end frame is version 3 and names its upstream task; a newer version, or another kind at version 3, is refused by name', () => {
  assert.equal(EXCHANGE_END_FRAME_VERSION, 3);
  assert.deepEqual(decodeFrame(topicRecord(encodeEndFrame(5))), { kind: 'end', from: 5 });
  // Records and watermark frames stay version 1: a member of the Weir before end frames reads them.
  assert.equal((decodeFrame(topicRecord(encodeWatermarkFrame(1, 10, false))) as { kind: string }).kind, 'watermark');
  for (const encoded of [
    [4, 'e', 0],
    [3, 'r', 0, [], undefined],
  ]) {
    assert.throws(
      () => decodeFrame(topicRecord(serialize(encoded))),
      (error: unknown) =>
        error instanceof WeirError &&
        error.code === 'CHECKPOINT_METADATA_TOO_NEW' &&
        /version 1 \(2 for barrier frames, 3 for end frames\)/.test(error.message),
    );
  }
});

const pending = (ended: boolean, channelEnded: boolean) => ({
  id: 4,
  location: { checkpointId: 4, path: '/storage/chk-4' } as never,
  offsets: [{ topic: 'x', partition: 0, offset: 10n }],
  channels: [
    { channel: 0, watermark: Number.POSITIVE_INFINITY, idle: false, ...(channelEnded ? { ended: true } : {}) },
    { channel: 1, watermark: 5, idle: false },
  ],
  skips: undefined,
  savepoint: undefined,
  ended,
});
const record = (ended: boolean, channelEnded: boolean) =>
  taskCheckpointRecord({
    stage: 'totals',
    task: 0,
    pending: pending(ended, channelEnded),
    operators: [],
    offsets: [{ topic: 'x', partition: 0, offset: 10n }],
    watermark: Number.POSITIVE_INFINITY,
    savepoint: undefined,
    restoredFrom: undefined,
    owner: { groupId: 'g', generationId: 3, memberId: 'm', groupInstanceId: null },
  });

test('a task checkpoint record says ended (version 2); so does one with a channel whose end came; others stay version 1', () => {
  const final = decodeTaskCheckpoint(encodeTaskCheckpoint(record(true, true)), 'here');
  assert.equal(final.version, TASK_CHECKPOINT_ENDED_VERSION);
  assert.equal(final.ended, true);
  assert.deepEqual(final.channels, [
    { channel: 0, watermark: null, idle: false, ended: true },
    { channel: 1, watermark: 5, idle: false },
  ]);
  const channelOnly = decodeTaskCheckpoint(encodeTaskCheckpoint(record(false, true)), 'here');
  assert.equal(channelOnly.version, TASK_CHECKPOINT_ENDED_VERSION);
  assert.equal(channelOnly.ended, undefined);
  const running = decodeTaskCheckpoint(encodeTaskCheckpoint(record(false, false)), 'here');
  assert.equal(running.version, TASK_CHECKPOINT_VERSION);
  assert.equal('ended' in running, false);
  const newer = Buffer.from(JSON.stringify({ ...running, version: 4 }));
  assert.throws(
    () => decodeTaskCheckpoint(newer, 'topic/0 offset 9'),
    (error: unknown) =>
      error instanceof WeirError && error.code === 'CHECKPOINT_METADATA_TOO_NEW' && /version 4; this Weir reads versions 1 to 3/.test(error.message),
  );
});

test('only a job whose every source is bounded can end', () => {
  const _config = parseEnvironmentConfig({ parallelism: 2, maxParallelism: 4 });
  const build = (bounded: boolean[]) => {
    const env = new StreamExecutionEnvironment();
    const [first, ...rest] = bounded.map((entry, index) => env.fromSource(source(entry), { uid: `in${index}` }));
    (rest.length === 0 ? first : first?.union(...rest))
      ?.keyBy((record) => record.key)
      .map((record) => record.n, { uid: 'n' })
      .sinkTo(kafkaSink<number>({ bootstrap: '127.0.0.1:1', topic: 'out', serializer: (n) => ({ value: String(n) }), deliveryGuarantee: 'exactly-once' }), {
        uid: 'out',
      });
    return env.graph;
  };
  assert.equal(everySourceBounded(build([true])), true);
  assert.equal(everySourceBounded(build([true, false])), false);
  assert.equal(everySourceBounded(build([false])), false);
});
