import assert from 'node:assert/strict';
import { test } from 'node:test';
import { murmurHash3X86_32 } from '../../../src/state/murmur-hash3.ts';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

test('murmur3 x86 32-bit matches the reference vectors', () => {
  const vectors: [Uint8Array, number, number][] = [
    [utf8(''), 0, 0],
    [utf8(''), 1, 0x514e28b7],
    [utf8(''), 0xffffffff, 0x81f16f39],
    [new Uint8Array(4), 0, 0x2362f9de],
    [utf8('hello'), 0, 613153351],
    [utf8('abc'), 0, 0xb3dd93fa],
    [utf8('a'), 0x9747b28c, 0x7fa09ea6],
    [utf8('aaaa'), 0x9747b28c, 0x5a97808a],
    [utf8('Hello, world!'), 0x9747b28c, 0x24884cba],
    [utf8('The quick brown fox jumps over the lazy dog'), 0x9747b28c, 0x2fa826cd],
  ];
  for (const [bytes, seed, expected] of vectors)
    assert.equal(murmurHash3X86_32(bytes, bytes.length, seed), expected, `${Buffer.from(bytes).toString()} seed ${seed}`);
});

test('murmur3 hashes only the first length bytes and returns an unsigned 32-bit integer', () => {
  const bytes = utf8('hello world');
  assert.equal(murmurHash3X86_32(bytes, 5), 613153351);
  for (let length = 0; length <= bytes.length; length++) {
    const hash = murmurHash3X86_32(bytes, length);
    assert.ok(Number.isInteger(hash) && hash >= 0 && hash <= 0xffffffff);
    assert.equal(hash, murmurHash3X86_32(bytes.subarray(0, length)));
  }
});
