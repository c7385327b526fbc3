import assert from 'node:assert/strict';
import { test } from 'node:test';
import { murmur2 } from '@platformatic/kafka';
import type { ClusterConnections } from '../../../../src/connectors/kafka/cluster-connections.ts';
import { KafkaRecordSerializer } from '../../../../src/connectors/kafka/kafka-record-serializer.ts';

const connections = { topic: async () => ({ partitions: Array.from({ length: 6 }, (_, partition) => ({ partition })) }) } as unknown as ClusterConnections;

test("string keys: murmur2 partitions as Kafka's Java client picks them, the same for a key seen again (its bytes shared), past the cache's size too", async () => {
  const serializer = new KafkaRecordSerializer<{ key: string; n: number }>(
    { topic: 'out', serializer: (record) => ({ key: record.key, value: String(record.n) }), deliveryGuarantee: 'exactly-once' },
    connections,
  );
  const keys = Array.from({ length: 25_000 }, (_, i) => `key-${i % 12_000}`);
  const messages = await serializer.serialize(keys.map((key, n) => ({ key, n })));
  for (const [i, message] of messages.entries()) {
    const key = Buffer.from(keys[i] as string);
    assert.deepEqual(message.key, key);
    assert.equal(message.partition, (murmur2(key) & 0x7fffffff) % 6);
    assert.equal(String(message.value), String(i));
  }
  const again = await serializer.serialize([{ key: 'key-7', n: 1 }]);
  assert.deepEqual(again[0]?.key, Buffer.from('key-7'));
});

test('a custom partitioner is asked for every record; a record without a key goes round-robin', async () => {
  const asked: string[] = [];
  const serializer = new KafkaRecordSerializer<{ key: string | null }>(
    {
      topic: 'out',
      serializer: (record) => ({ key: record.key, value: 'v' }),
      deliveryGuarantee: 'exactly-once',
      partitioner: (key, count) => {
        asked.push(String(key));
        return count - 1;
      },
    },
    connections,
  );
  const messages = await serializer.serialize([{ key: 'a' }, { key: 'a' }]);
  assert.deepEqual(asked, ['a', 'a']);
  assert.deepEqual(
    messages.map((message) => message.partition),
    [5, 5],
  );
  const plain = new KafkaRecordSerializer<{ key: string | null }>(
    { topic: 'out', serializer: (record) => ({ key: record.key, value: 'v' }), deliveryGuarantee: 'exactly-once' },
    connections,
  );
  const unkeyed = await plain.serialize([{ key: null }, { key: null }, { key: null }]);
  assert.deepEqual(
    unkeyed.map((message) => message.partition),
    [0, 1, 2],
  );
  assert.equal(unkeyed[0]?.key, undefined);
});
