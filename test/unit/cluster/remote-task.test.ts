import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crossedError, type FailureDetail, RemoteTask } from '../../../src/cluster/remote-task.ts';
import type { ToTaskThread } from '../../../src/cluster/task-thread-messages.ts';
import { NumericMap } from '../../../src/connectors/kafka/kafka-protocol.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';

const open = { transactionalId: 't', producerId: 7n, producerEpoch: 3, partitions: new Set<string>(), sequences: new NumericMap(), records: 0 };

function remote() {
  const posted: ToTaskThread[] = [];
  const failures: [Error, FailureDetail][] = [];
  const run = new RemoteTask({
    run: 1,
    name: 'totals task 2',
    thread: 1,
    post: (message) => posted.push(message),
    start: { stage: 'totals', task: 2, restored: undefined },
    onFailure: (error, detail) => failures.push([error, detail]),
  });
  return { run, posted, failures };
}

test('a start crosses as the producer alone (its sequences start again on the thread) and resolves once the thread says it runs', async () => {
  const { run, posted } = remote();
  const started = run.start(open);
  assert.deepEqual(posted, [
    { type: 'start', run: 1, stage: 'totals', task: 2, restored: undefined, open: { transactionalId: 't', producerId: 7n, producerEpoch: 3 } },
  ]);
  run.receive({ type: 'started', run: 1, restoredBytes: 10, restoreMs: 2 });
  await started;
  assert.equal(run.restoredBytes, 10);
  run.report(undefined, 4, 9);
  assert.equal(run.completed, 4);
  assert.equal(run.latestCheckpointId, 9);
});

test('a failure reaches the member once, with how the group refused its commit; a WeirError keeps its code', () => {
  const { run, failures } = remote();
  void run.start(open);
  run.receive({ type: 'started', run: 1, restoredBytes: 0, restoreMs: 0 });
  const fenced = new WeirError('TASK_FENCED', 'fenced', { fault: 'external' });
  run.receive({ type: 'failed', run: 1, error: { weir: fenced.serialize() }, byGroup: true, committedWith: 4 });
  run.receive({ type: 'failed', run: 1, error: { message: 'again', stack: undefined }, byGroup: false, committedWith: 5 });
  assert.equal(failures.length, 1);
  const [error, detail] = failures[0] as [Error, FailureDetail];
  assert.ok(error instanceof WeirError && error.code === 'TASK_FENCED');
  assert.deepEqual(detail, { byGroup: true, committedWith: 4 });
});

test('its thread exiting fails a running task, rejects a start under way, and settles a stop', async () => {
  const running = remote();
  void running.run.start(open);
  running.run.receive({ type: 'started', run: 1, restoredBytes: 0, restoreMs: 0 });
  running.run.threadExited(new Error('thread 1 exited'));
  assert.equal(running.failures.length, 1);
  await running.run.stop(); // settles without the thread
  const starting = remote();
  const start = starting.run.start(open);
  starting.run.threadExited(new Error('thread 1 exited'));
  await assert.rejects(start, /thread 1 exited/);
  assert.equal(starting.failures.length, 0, 'the failed start is the member’s to handle, once');
});

test('an error that is no WeirError crosses with its message and stack', () => {
  const error = crossedError({ message: 'boom', stack: 'Error: boom\n    at x' });
  assert.equal(error.message, 'boom');
  assert.equal(error.stack, 'Error: boom\n    at x');
});
