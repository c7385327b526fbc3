import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { decodeFrame, encodeRecordsFrame, encodeWatermarkFrame } from '../../../src/cluster/exchange-frames.ts';
import type { TopicRecord } from '../../../src/connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const topicRecord = (value: Buffer): TopicRecord => ({ topic: 'x', partition: 3, offset: 7n, timestamp: 0n, key: null, value, headers: [], producerId: 1n });

test('exchange frames keep what JSON loses, and a frame of a newer version is refused by name', () => {
  const records = [{ at: new Date(5), big: 2n ** 70n, missing: undefined, map: new Map([['k', 1]]) }];
  const frame = decodeFrame(topicRecord(encodeRecordsFrame(4, records, [5])));
  assert.deepEqual(frame, { kind: 'records', from: 4, records, timestamps: [5] });
  assert.deepEqual(decodeFrame(topicRecord(encodeWatermarkFrame(2, Number.NEGATIVE_INFINITY, true))), {
    kind: 'watermark',
    from: 2,
    watermark: Number.NEGATIVE_INFINITY,
    idle: true,
  });
  assert.throws(
    () => decodeFrame(topicRecord(serialize([2, 'r', 0, [], undefined]))),
    (error: unknown) => error instanceof WeirError && error.code === 'CHECKPOINT_METADATA_TOO_NEW' && /partition 3 offset 7/.test(error.message),
  );
  assert.throws(
    () => decodeFrame(topicRecord(Buffer.from('{"not":"v8"}'))),
    (error: unknown) => error instanceof WeirError,
  );
});
