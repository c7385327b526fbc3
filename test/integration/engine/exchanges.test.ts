/** Union, rebalance and broadcast deliver every record where they should, exactly. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';

test('union of two sources, rebalanced over 3, broadcast to 2 sink subtasks: every record exactly twice', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-exchanges-'));
  try {
    process.env.EX_OUTPUT = join(folder, 'out');
    await runJob({
      job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'exchanges-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
    });
    const counts = new Map<number, number>();
    const perSubtask = new Map<string, number>();
    for (const name of await readdir(join(folder, 'out'))) {
      if (!name.startsWith('part-')) continue;
      const subtask = name.split('-')[1] as string;
      for (const line of (await readFile(join(folder, 'out', name), 'utf8')).split('\n').filter(Boolean)) {
        const value = Number(line);
        counts.set(value, (counts.get(value) ?? 0) + 1);
        perSubtask.set(subtask, (perSubtask.get(subtask) ?? 0) + 1);
      }
    }
    assert.equal(counts.size, 2000);
    for (let value = 0; value < 2000; value++) assert.equal(counts.get(value), 2, `value ${value}`);
    assert.deepEqual(Object.fromEntries(perSubtask), { '0': 2000, '1': 2000 });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
