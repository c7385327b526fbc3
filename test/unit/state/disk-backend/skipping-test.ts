import * as nodeTest from 'node:test';

/**
 * node:test for the heap backend's tests run against the disk backend: the same `test`, except
 * that the cases named in {@link HEAP_ONLY} are skipped, with why.
 */
const SERIALIZED_AT_WRITE =
  'the disk backend writes a value into lmdb (its write buffer flushed: at the latest in the synchronous part of the snapshot) and fails there with the same STATE_NOT_SERIALIZABLE user error, as Flink RocksDB fails at the write; lmdb-keyed-state-backend.test.ts checks it';
const HEAP_ONLY = new Map<string, string>([
  ['a state value that cannot be serialized fails the snapshot with the user error, also when it was copied on write', SERIALIZED_AT_WRITE],
  ['a pending snapshot that fails as the next one starts reports its own error; the next one is taken', SERIALIZED_AT_WRITE],
  [
    'truncated or altered snapshots are reported as corrupt',
    'the canonical reader (keyed-state-snapshot.ts) is the same for both backends and tested with the heap one; this case opens a backend per altered byte (about 30 s on lmdb)',
  ],
  [
    'incremental cleanup removes the expired values of other keys as state is used, every record too with everyRecord',
    "the disk backend's incremental cleanup visits entries once its write buffer has written them to lmdb (Flink's RocksDB backend cleans up in compaction instead); an expired value never reads as live either way",
  ],
]);

export const { after, afterEach, before, beforeEach, describe, it, mock, suite } = nodeTest;

export function test(name: string, ...rest: unknown[]): unknown {
  const why = HEAP_ONLY.get(name);
  const run = nodeTest.test as (...args: unknown[]) => unknown;
  if (why !== undefined) return run(`${name} [disk backend]`, { skip: why }, () => {});
  return run(`${name} [disk backend]`, ...rest);
}
