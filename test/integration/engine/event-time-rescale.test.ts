/**
 * Rescaling with event time: stop a windowed count job with a savepoint at parallelism 2 while
 * windows are open, resume it at parallelism 3: the open windows and their pending event-time
 * timers move with their key groups, and the results equal an uninterrupted run's.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileSystemCheckpointStorage } from '../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';
import { expectedWindowCounts, type WindowCount } from '../../fixtures/jobs/windowed-count-job.ts';
import { canonical, readCommitted } from './window-output.ts';

const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'windowed-count-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

test('stop with a savepoint at parallelism 2, resume at 3: window results and pending timers carry over', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-et-rescale-'));
  folders.push(folder);
  const count = 20_000;
  process.env.WC_OUTPUT = join(folder, 'out');
  process.env.WC_COUNT = String(count);
  process.env.WC_RATE = '5000';
  const config = (parallelism: number) => ({ parallelism, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } });

  const first = await startJob({ job, config: config(2) });
  while (readCommitted<WindowCount>(join(folder, 'out')).length === 0) await sleep(50); // some windows have fired and been committed
  const savepoint = await first.stopWithSavepoint();
  await first.result;
  const before = readCommitted<WindowCount>(join(folder, 'out'));
  assert.ok(before.length > 0 && before.length < expectedWindowCounts(count, 1000).length, `the first run stopped midway (${before.length} windows)`);

  // The savepoint holds open windows with their timers (event-time timers in the window operator's keyed state).
  const operator = savepoint.metadata.operators.find((candidate) => candidate.uid === 'window-counts');
  assert.ok(operator !== undefined);
  const storage = new FileSystemCheckpointStorage(join(folder, 'checkpoints'));
  const snapshots = await Promise.all(
    operator.subtasks.filter((subtask) => subtask.keyed !== undefined).map((subtask) => storage.readState(savepoint.location, subtask.keyed as never)),
  );
  let pendingTimers = 0;
  for (let index = 0; index < 3; index++) {
    const backend = new HeapKeyedStateBackend({
      maxParallelism: 128,
      keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 3, index),
      operatorName: 'check',
    });
    backend.restore(snapshots);
    pendingTimers += backend.numTimers('event');
  }
  assert.ok(pendingTimers > 0, `pending event-time timers in the savepoint (${pendingTimers})`);

  const second = await startJob({ job, config: config(3), fromSavepoint: savepoint.location.path });
  await second.result;
  const all = readCommitted<WindowCount>(join(folder, 'out'));
  assert.deepEqual(canonical(all), canonical(expectedWindowCounts(count, 1000)), 'every window once, with exact counts');
});
