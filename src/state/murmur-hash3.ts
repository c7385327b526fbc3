/**
 * MurmurHash3, x86 32-bit variant (Austin Appleby's `MurmurHash3_x86_32`), over the first `length`
 * bytes of `data`, as an unsigned 32-bit integer. Pure integer arithmetic, so the result is the same
 * in every process, platform and Node version.
 */
export function murmurHash3X86_32(data: Uint8Array, length: number = data.length, seed = 0): number {
  let h1 = seed | 0;
  const blocksEnd = length & ~3;
  let i = 0;
  for (; i < blocksEnd; i += 4) {
    let k1 = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k1 = Math.imul(k1, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    k1 = Math.imul(k1, 0x1b873593);
    h1 ^= k1;
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
  }
  const tail = length & 3;
  if (tail !== 0) {
    let k1 = 0;
    if (tail === 3) k1 ^= data[i + 2]! << 16;
    if (tail >= 2) k1 ^= data[i + 1]! << 8;
    k1 ^= data[i]!;
    k1 = Math.imul(k1, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    k1 = Math.imul(k1, 0x1b873593);
    h1 ^= k1;
  }
  h1 ^= length;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}
