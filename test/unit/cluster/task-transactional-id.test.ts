import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Stage } from '../../../src/cluster/stage-plan.ts';
import { legacyTaskTransactionalId, taskTransactionalId } from '../../../src/cluster/task-transactional-id.ts';

const stage = (uid: string): Stage => ({ id: 0, uid, vertices: [], sourceNodes: [], inputs: [], taskCount: undefined });

test('task transactional ids of different clusters, stages or tasks never meet, however the names are cut', () => {
  const ids = [
    taskTransactionalId('a-b', stage('c'), 0),
    taskTransactionalId('a', stage('b-c'), 0),
    taskTransactionalId('a', stage('b'), 10),
    taskTransactionalId('a', stage('b-1'), 0),
    taskTransactionalId('a', stage('b'), 1),
    taskTransactionalId('a', stage(`${'s'.repeat(70)}1`), 0),
    taskTransactionalId('a', stage(`${'s'.repeat(70)}2`), 0),
  ];
  assert.equal(new Set(ids).size, ids.length, ids.join('\n'));
});

test('a task transactional id is readable, fixed for the job, and the legacy one is the old form', () => {
  const id = taskTransactionalId('payments-prod', stage('totals'), 3);
  assert.match(id, /^weir-payments-prod-totals-3-h[0-9a-f]{8}$/);
  assert.equal(taskTransactionalId('payments-prod', stage('totals'), 3), id);
  assert.equal(legacyTaskTransactionalId('payments-prod', stage('totals'), 3), 'weir-payments-prod-totals-3');
});
