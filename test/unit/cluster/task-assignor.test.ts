import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeAssignment, decodeMemberMetadata, encodeMemberMetadata } from '../../../src/cluster/member-protocol.ts';
import { type AssignorMember, assignTasks } from '../../../src/cluster/task-assignor.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const all = (assignment: Map<string, number[]>) => [...assignment.values()].flat().sort((a, b) => a - b);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const counts = (assignment: Map<string, number[]>) => [...assignment.values()].map((tasks) => tasks.length);

test('a fresh group: every task once, shares differ by at most one', () => {
  const members = ['c', 'a', 'b', 'e', 'd'].map((memberId) => ({ memberId, owned: [] }));
  const assignment = assignTasks(12, members);
  assert.deepEqual(all(assignment), range(12));
  assert.deepEqual(
    counts(assignment).sort((a, b) => b - a),
    [3, 3, 2, 2, 2],
  );
  assert.deepEqual(assignTasks(12, [...members].reverse()), assignment, 'deterministic whatever the join order');
});

test('sticky: a member that joins takes only its share; one that leaves hands only its own tasks on', () => {
  const three: AssignorMember[] = [
    { memberId: 'a', owned: [0, 1, 2, 3] },
    { memberId: 'b', owned: [4, 5, 6, 7] },
    { memberId: 'c', owned: [8, 9, 10, 11] },
  ];
  const four = assignTasks(12, [...three, { memberId: 'd', owned: [] }]);
  assert.deepEqual(all(four), range(12));
  assert.deepEqual(counts(four), [3, 3, 3, 3]);
  for (const member of three)
    for (const task of four.get(member.memberId) as number[]) assert.ok(member.owned.includes(task), 'old members keep only tasks they had');
  const two = assignTasks(12, three.slice(0, 2));
  assert.deepEqual(
    two.get('a')?.slice(0, 4),
    [0, 1, 2, 3].filter((task) => two.get('a')?.includes(task)),
  );
  assert.ok([0, 1, 2, 3].every((task) => two.get('a')?.includes(task)));
  assert.ok([4, 5, 6, 7].every((task) => two.get('b')?.includes(task)));
  assert.deepEqual(all(two), range(12));
});

test('static members are ordered by instance id; a task two members claim goes to one; claims out of range are ignored', () => {
  const assignment = assignTasks(4, [
    { memberId: 'm-2', instanceId: 'pod-0', owned: [0, 1, 99] },
    { memberId: 'm-1', instanceId: 'pod-1', owned: [1, 2] },
  ]);
  assert.deepEqual(assignment.get('m-2'), [0, 1]);
  assert.deepEqual(assignment.get('m-1'), [2, 3]);
  assert.throws(() => assignTasks(0, []), /taskCount must be a whole number of at least 1/);
});

test('the member protocol is versioned JSON; a newer version is refused by name', () => {
  const bytes = encodeMemberMetadata({ version: 1, taskCount: 12 });
  assert.deepEqual(decodeMemberMetadata(bytes, 'm'), { version: 1, taskCount: 12 });
  assert.throws(
    () => decodeAssignment(Buffer.from(JSON.stringify({ version: 2 })), 'm'),
    (error: unknown) =>
      error instanceof WeirError && error.code === 'CLUSTER_PROTOCOL_MISMATCH' && /protocol version 2; this Weir speaks version 1/.test(error.message),
  );
  assert.throws(() => decodeMemberMetadata(Buffer.from('not json'), 'm'), /is not Weir's cluster protocol/);
});
