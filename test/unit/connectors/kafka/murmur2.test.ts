import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import * as Kafka from '@platformatic/kafka';
import { murmur2 } from '../../../../src/connectors/kafka/murmur2.ts';

test('murmur2 equals the Kafka client port of the Java Utils.murmur2 for every length and byte', () => {
  const inputs = [Buffer.alloc(0), Buffer.from('a'), Buffer.from('ab'), Buffer.from('abc'), Buffer.from('abcd'), Buffer.from('user-42')];
  for (let length = 0; length < 64; length++) for (let i = 0; i < 20; i++) inputs.push(randomBytes(length));
  inputs.push(Buffer.alloc(7, 0xff), Buffer.alloc(8, 0x80));
  for (const input of inputs) assert.equal(murmur2(input), Kafka.murmur2(input), `input ${input.toString('hex')}`);
});

test("murmur2 puts keys on the Java client's partitions (known values)", () => {
  // From Kafka's own DefaultPartitionerTest / UtilsTest: murmur2 of "21" is -973932308.
  assert.equal(murmur2(Buffer.from('21')), -973932308);
});
