import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultGidPrefix,
  GID_PREFIX_PATTERN,
  isSinkSessionOf,
  MAX_GID_LENGTH,
  MAX_GID_PREFIX_LENGTH,
  newRunToken,
  parseGid,
  preparedTransactionGid,
  sinkSessionName,
} from '../../../../src/connectors/postgres/postgres-gid.ts';
import { ownerOfToken, ownerToken } from '../../../../src/core/operator/task-owner.ts';

test('a gid names the job, the sink uid, the subtask, the checkpoint and the run, and parses back one way', () => {
  const prefix = defaultGidPrefix('orders', 'totals-sink');
  assert.equal(prefix, 'weir-orders-totals-sink');
  const gid = preparedTransactionGid(prefix, 3, 42, 'k2x0a9zz');
  assert.equal(gid, 'weir-orders-totals-sink-3-42-ok2x0a9zz');
  assert.deepEqual(parseGid(prefix, gid), { subtask: 3, checkpointId: 42, run: 'k2x0a9zz', owner: undefined });
  // A gid of a Weir before run tokens (a checkpoint of it holds such gids).
  assert.deepEqual(parseGid(prefix, 'weir-orders-totals-sink-3-42'), { subtask: 3, checkpointId: 42, run: undefined, owner: undefined });
});

test("a cluster task's run is named by the producer it was fenced in with, in base 36, and parses back to it", () => {
  const owner = { producerId: 4007n, epoch: 12 };
  assert.equal(ownerToken(owner), '33b_c');
  const gid = preparedTransactionGid('weir-orders-totals-sink', 3, 42, ownerToken(owner));
  assert.equal(gid, 'weir-orders-totals-sink-3-42-o33b_c');
  assert.deepEqual(parseGid('weir-orders-totals-sink', gid), { subtask: 3, checkpointId: 42, run: '33b_c', owner });
  const largest = { producerId: 2n ** 63n - 1n, epoch: 32767 };
  assert.deepEqual(ownerOfToken(ownerToken(largest)), largest);
  assert.equal(ownerToken(largest).length, 17);
  assert.equal(ownerOfToken('k2x0a9zz'), undefined, 'a random token of one process names no owner');
  assert.equal(ownerOfToken('33b_c_d'), undefined);
  assert.equal(ownerOfToken(undefined), undefined);
});

test("each run's token is new: two runs of a subtask never prepare under the same name", () => {
  const tokens = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const token = newRunToken();
    assert.match(token, /^[0-9a-z]{8}$/);
    tokens.add(token);
  }
  assert.equal(tokens.size, 1000);
  assert.notEqual(preparedTransactionGid('p', 0, 2, newRunToken()), preparedTransactionGid('p', 0, 2, newRunToken()));
});

test("another sink's gid whose prefix merely starts with ours is not ours", () => {
  const prefix = 'weir-orders-sink';
  assert.equal(parseGid(prefix, 'weir-orders-sink-x-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-1-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sinkA-0-3'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-3x'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-3-o'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-0-3-oAB'), undefined);
  assert.equal(parseGid(prefix, 'weir-orders-sink-1-0-3-oab'), undefined);
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
  const gid = preparedTransactionGid(prefix, 32767, Number.MAX_SAFE_INTEGER, newRunToken());
  assert.ok(Buffer.byteLength(gid) <= MAX_GID_LENGTH, `${gid.length} bytes`);
  assert.deepEqual(parseGid(prefix, gid)?.checkpointId, Number.MAX_SAFE_INTEGER);
  // The longest prefix a user may set, with the largest subtask (below maxParallelism's bound), checkpoint id and run.
  const owner = ownerToken({ producerId: 2n ** 63n - 1n, epoch: 32767 });
  const longest = preparedTransactionGid('p'.repeat(MAX_GID_PREFIX_LENGTH), 32767, Number.MAX_SAFE_INTEGER, owner);
  assert.ok(Buffer.byteLength(longest) <= MAX_GID_LENGTH, `${longest.length} bytes`);
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
