import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultGidPrefix, GID_PREFIX_PATTERN, MAX_GID_LENGTH, parseGid, preparedTransactionGid } from '../../../../src/connectors/postgres/postgres-gid.ts';

test('a gid names the job, the sink uid, the subtask and the checkpoint, and parses back one way', () => {
  const prefix = defaultGidPrefix('orders', 'totals-sink');
  assert.equal(prefix, 'weir-orders-totals-sink');
  const gid = preparedTransactionGid(prefix, 3, 42);
  assert.equal(gid, 'weir-orders-totals-sink-3-42');
  assert.deepEqual(parseGid(prefix, gid), { subtask: 3, checkpointId: 42 });
});

test("another sink's gid whose prefix merely starts with ours is not ours", () => {
  const prefix = 'weir-orders-sink';
  assert.equal(parseGid(prefix, 'weir-orders-sink-x-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-1-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sinkA-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-3x'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-'), undefined);
});

test('names that could collide get a hash of the original names: unambiguous prefixes', () => {
  // A job name with "-" could be read at another split point; names with other characters are reduced.
  const pairs: [string, string][] = [
    ['a-b', 'x'],
    ['a', 'b-x'],
    ['a b', 'x'],
    ['a/b', 'x'],
    ['a', 'x'],
  ];
  const prefixes = pairs.map(([job, uid]) => defaultGidPrefix(job, uid));
  assert.equal(new Set(prefixes).size, pairs.length, prefixes.join(' '));
  assert.match(defaultGidPrefix('a-b', 'x'), /^weir-a-b-x-h[0-9a-f]{12}$/);
  assert.match(defaultGidPrefix('a b', 'x'), /^weir-a-b-x-h[0-9a-f]{12}$/);
  for (const prefix of prefixes) assert.match(prefix, GID_PREFIX_PATTERN);
});

test("long names are cut and hashed: the gid stays within PostgreSQL's 199 bytes", () => {
  const job = 'j'.repeat(500);
  const prefix = defaultGidPrefix(job, 'u'.repeat(300));
  assert.notEqual(prefix, defaultGidPrefix(`${job}x`, 'u'.repeat(300)));
  const gid = preparedTransactionGid(prefix, 32767, Number.MAX_SAFE_INTEGER);
  assert.ok(Buffer.byteLength(gid) <= MAX_GID_LENGTH, `${gid.length} bytes`);
  assert.deepEqual(parseGid(prefix, gid), { subtask: 32767, checkpointId: Number.MAX_SAFE_INTEGER });
});
