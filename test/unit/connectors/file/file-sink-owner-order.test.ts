/**
 * The file sink in cluster mode, where a task's runs are ordered (task-owner.ts): its in-progress
 * and pending part files name the owner that wrote them, so a restore never deletes a later
 * owner's (its own run may have stood still between its fencing and its recovery while the task
 * moved on), and the task's owner deletes what its earlier owners (zombies) pre-committed after its
 * restore. On the real file system.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { type FileCommittable, fileSinkLogic } from '../../../../src/connectors/file/file-sink.ts';
import type { OperatorContext } from '../../../../src/core/operator/stream-operator.ts';

const TASK = 2;
const TASKS = 3;
const PRODUCER = 811n;
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function output(): string {
  const folder = mkdtempSync(join(tmpdir(), 'weir-file-owner-'));
  folders.push(folder);
  return folder;
}

/** A run of the task's file sink, fenced in with `epoch` of the task's producer id (none: a run of one process). */
function run(path: string, epoch: number | undefined) {
  const logic = fileSinkLogic<{ n: number }>({ path });
  const taskOwner = epoch === undefined ? undefined : { producerId: PRODUCER, epoch };
  logic.open?.({ subtaskIndex: TASK, parallelism: TASKS, taskOwner } as unknown as OperatorContext);
  return {
    logic,
    recover: (held: FileCommittable[] = []) =>
      logic.abortLingering?.({ subtaskIndex: TASK, parallelism: TASKS, restoredCheckpointId: 1, allRestoredCommittables: held }),
    /** A checkpoint's part file: `records` written and pre-committed. */
    prepare: async (checkpointId: number, records: number[]) => {
      const transaction = await logic.beginTransaction();
      await logic.write(
        transaction,
        records.map((n) => ({ n })),
      );
      return (await logic.preCommit(transaction, checkpointId)) as FileCommittable;
    },
  };
}

function committedRecords(path: string): number[] {
  return readdirSync(path)
    .filter((name) => name.startsWith('part-'))
    .flatMap((name) => readFileSync(join(path, name), 'utf8').trim().split('\n'))
    .map((line) => (JSON.parse(line) as { n: number }).n)
    .sort((a, b) => a - b);
}

test("a restore that stood still before it looked at the part files, its run fenced meanwhile, never deletes a later owner's", async () => {
  const path = output();
  // Run A (epoch 5) was fenced in and began its restore, then stood still; the task moved to run B
  // (epoch 6), which restored, pre-committed checkpoint 2, and its record 2 committed in Kafka.
  const stalled = run(path, 5);
  const next = run(path, 6);
  await next.recover();
  const open = await next.logic.beginTransaction();
  await next.logic.write(open, [{ n: 3 }]);
  const committable = await next.prepare(2, [1, 2]);
  // A wakes and recovers what its restored checkpoint holds (nothing).
  await stalled.recover();
  await next.logic.commit(committable); // would find its pending file gone: DATA_LOSS
  await next.logic.preCommit(open, 3); // its file in progress is still there
  assert.deepEqual(committedRecords(path), [1, 2]);
});

test("a zombie's part file pre-committed after its successor's restore is deleted by the successor at its next completed checkpoint; the zombie's own look leaves the successor's", async () => {
  const path = output();
  const next = run(path, 7);
  await next.recover();
  const zombie = run(path, 4);
  await zombie.prepare(2, [10, 11]); // its Kafka commit will fail: never committed
  const mine = await next.prepare(2, [1, 2]);
  await zombie.logic.notifyCheckpointComplete?.(1);
  await next.logic.commit(mine);
  await next.logic.notifyCheckpointComplete?.(2);
  assert.deepEqual(readdirSync(join(path, '.pending')), [], "the zombie's pending file is deleted");
  assert.deepEqual(committedRecords(path), [1, 2]);
});

test('one process: a restore deletes every part file of its share that its checkpoint does not hold', async () => {
  const path = output();
  const crashed = run(path, undefined);
  await crashed.prepare(2, [1]);
  const transaction = await crashed.logic.beginTransaction();
  await crashed.logic.write(transaction, [{ n: 2 }]);
  const restarted = run(path, undefined);
  assert.equal(await restarted.recover(), 2);
  assert.deepEqual(readdirSync(join(path, '.pending')), []);
  assert.deepEqual(readdirSync(join(path, '.in-progress')), []);
});
