/** Processing-time timers of a keyed process function fire for their key, not before their time. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';
import type { TimerOutput } from '../../fixtures/jobs/timer-job.ts';

test('processing-time timers fire per key with that key current, at or after their time', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-timers-'));
  try {
    process.env.TIMER_OUTPUT = join(folder, 'out');
    await runJob({
      job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'timer-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
    });
    const outputs: TimerOutput[] = [];
    for (const name of await readdir(join(folder, 'out'))) {
      if (!name.startsWith('part-')) continue;
      for (const line of (await readFile(join(folder, 'out', name), 'utf8')).split('\n').filter(Boolean)) outputs.push(JSON.parse(line));
    }
    outputs.sort((a, b) => a.firedAt - b.firedAt); // part files list in name order, not time order
    const keys = new Set(outputs.map((output) => output.key));
    assert.equal(keys.size, 10, `timers fired for every key (${[...keys].join(', ')})`);
    for (const output of outputs) assert.ok(output.firedAt >= output.timestamp, `a timer fired early: ${JSON.stringify(output)}`);
    // Per key the counts a timer reports only grow: each timer saw its own key's state.
    for (const key of keys) {
      const counts = outputs.filter((output) => output.key === key).map((output) => output.count);
      assert.deepEqual(
        counts,
        [...counts].sort((a, b) => a - b),
      );
      assert.ok((counts.at(-1) ?? 0) <= 300, `key ${key} counted at most its 300 records`);
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
