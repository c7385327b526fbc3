import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultGidPrefix,
  GID_PREFIX_PATTERN,
  isSinkSessionOf,
  MAX_GID_LENGTH,
  parseGid,
  preparedTransactionGid,
  sinkSessionName,
} from '../../../../src/connectors/postgres/postgres-gid.ts';

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

test("a subtask's session names carry its prefix (cut and hashed when long), and only that prefix's sessions match", () => {
  assert.equal(sinkSessionName('weir-orders-totals', 3, 'write'), 'weir weir-orders-totals-3');
  assert.equal(sinkSessionName('weir-orders-totals', 3, 'commit'), 'weir weir-orders-totals-3 commit');
  assert.ok(isSinkSessionOf('weir-orders-totals', 'weir weir-orders-totals-3'));
  assert.ok(isSinkSessionOf('weir-orders-totals', 'weir weir-orders-totals-3 commit'));
  assert.ok(!isSinkSessionOf('weir-orders', 'weir weir-orders-totals-3'), 'a longer prefix is another sink');
  assert.ok(!isSinkSessionOf('weir-orders-totals', 'weir weir-orders-totals-x-3'));
  const long = `weir-${'j'.repeat(60)}-${'u'.repeat(60)}-h0123456789ab`;
  for (const role of ['write', 'commit'] as const) {
    const name = sinkSessionName(long, 32_767, role);
    assert.ok(Buffer.byteLength(name) <= 63, `${name} fits application_name`);
    assert.ok(isSinkSessionOf(long, name));
    assert.ok(!isSinkSessionOf(`${long}x`, name), 'two long prefixes with the same start are told apart');
  }
  assert.ok(name(`${'a'.repeat(45)}`).includes('a'.repeat(45)), 'a prefix of 45 characters is shown whole');
});

const name = (prefix: string) => sinkSessionName(prefix, 0, 'write');
