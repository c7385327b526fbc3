/**
 * Kafka's murmur2 (the Java client's `Utils.murmur2`, seed 0x9747b28c), which its default
 * partitioner takes of a record's key bytes: `(murmur2(key) & 0x7fffffff) % partitions` puts a key
 * where a Java producer, Kafka Streams and Flink's Kafka sink put it. 32-bit integer arithmetic
 * (Math.imul), no allocation; the same value as the Java client for every input.
 */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = 0x9747b28c ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= data[whole + 2]! << 16;
    if (rest >= 2) h ^= data[whole + 1]! << 8;
    h ^= data[whole]!;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}
