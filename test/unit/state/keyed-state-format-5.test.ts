import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { assertSameState, backendWith, decode, fillAll } from './keyed-state-fixtures.ts';

/**
 * A version 6 snapshot written again in version 5's layout (the index after the states, one
 * checksum over both, the sections' offsets moved by the index's length): what a Weir before the
 * index moved to the end wrote.
 */
function asFormat5(v6: Uint8Array): Buffer {
  const bytes = Buffer.from(v6);
  let position = 19; // magic, version, maxParallelism, range, flags
  const states = bytes.readUInt32LE(position);
  position += 4;
  for (let i = 0; i < states; i++) position += 1 + 4 + bytes.readUInt32LE(position + 1);
  const headerEnd = position;
  const bodyStart = headerEnd + 4;
  const indexOffset = bytes.readUInt32LE(bytes.length - 4);
  const count = bytes.readUInt32LE(indexOffset);
  const indexLength = 4 + count * 16;
  const header = Buffer.alloc(headerEnd + indexLength + 4);
  bytes.copy(header, 0, 0, headerEnd);
  header.writeUInt16LE(5, 4);
  header.writeUInt32LE(count, headerEnd);
  for (let i = 0; i < count; i++) {
    const entry = indexOffset + 4 + i * 16;
    const at = headerEnd + 4 + i * 16;
    header.writeUInt32LE(bytes.readUInt32LE(entry), at);
    header.writeUInt32LE(bytes.readUInt32LE(entry + 4) - bodyStart + headerEnd + indexLength + 4, at + 4);
    header.writeUInt32LE(bytes.readUInt32LE(entry + 8), at + 8);
    header.writeUInt32LE(bytes.readUInt32LE(entry + 12), at + 12);
  }
  header.writeUInt32LE(crc32(header.subarray(0, headerEnd + indexLength)) >>> 0, headerEnd + indexLength);
  return Buffer.concat([header, bytes.subarray(bodyStart, indexOffset)]);
}

test('a version 5 snapshot (the index before the sections) restores the same as the version 6 one written now', () => {
  const backend = backendWith();
  fillAll(backend);
  const v6 = backend.snapshot();
  assert.equal(v6[4], 6);
  const v5 = asFormat5(v6);
  assert.equal(v5[4], 5);
  const fromV5 = backendWith();
  fromV5.restore([v5]);
  assertSameState(decode(fromV5.snapshot()), decode(v6), 'restored from version 5');
});

test('version 6: an index offset, index or header checksum that does not hold is reported as corrupt, naming it', () => {
  const backend = backendWith();
  fillAll(backend);
  const v6 = backend.snapshot();
  const corrupt = (alter: (bytes: Buffer) => Buffer, problem: RegExp) =>
    assert.throws(
      () => backendWith().restore([alter(Buffer.from(v6))]),
      (e: unknown) => e instanceof WeirError && e.code === 'STATE_SNAPSHOT_CORRUPT' && problem.test(e.message),
    );
  const indexOffset = Buffer.from(v6).readUInt32LE(v6.length - 4);
  corrupt((bytes) => {
    bytes.writeUInt32LE(bytes.length, bytes.length - 4);
    return bytes;
  }, /index offset \d+ is outside the snapshot/);
  corrupt((bytes) => {
    bytes[indexOffset + 6] = (bytes[indexOffset + 6] as number) ^ 0xff;
    return bytes;
  }, /index checksum does not match/);
  corrupt((bytes) => {
    bytes[10] = (bytes[10] as number) ^ 0x01;
    return bytes;
  }, /header checksum does not match/);
  corrupt((bytes) => bytes.subarray(0, bytes.length - 3), /index offset|ends|index/);
  corrupt((bytes) => bytes.subarray(0, 30), /ends|index/);
});
