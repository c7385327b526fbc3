/**
 * Event time through the engine: window results do not depend on arrival order; late records go
 * to the late side output (or are counted), none lost; an idle split or subtask does not stall the
 * windows of the others once the idleness timeout passes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runJob, startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import type { IdleWindowCount } from '../../fixtures/jobs/idle-split-job.ts';
import { type LateEvent, type LateWindowCount, lateEventOf } from '../../fixtures/jobs/late-data-job.ts';
import { shuffledEventOf, type WindowResult } from '../../fixtures/jobs/shuffled-windows-job.ts';
import { expectedWindowPairs, type WindowJoined } from '../../fixtures/jobs/window-join-job.ts';
import { canonical, readCommitted } from './window-output.ts';

const jobs = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});
const newFolder = async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-event-time-'));
  folders.push(folder);
  return folder;
};

/** The windows of the shuffled-windows job, computed directly from its records. */
function expectedWindows(count: number): WindowResult[] {
  const events = Array.from({ length: count }, (_, id) => shuffledEventOf(id));
  const results = new Map<string, WindowResult>();
  const add = (kind: WindowResult['kind'], key: string, start: number, end: number, id: number) => {
    const name = `${kind}/${key}/${start}`;
    const result = results.get(name) ?? { kind, key, start, end, count: 0, sum: 0 };
    result.count++;
    result.sum += id;
    results.set(name, result);
  };
  for (const event of events) {
    const tumbling = event.ts - (event.ts % 1000);
    add('tumbling', event.key, tumbling, tumbling + 1000, event.id);
    for (let start = event.ts - (event.ts % 500); start > event.ts - 2000; start -= 500) add('sliding', event.key, start, start + 2000, event.id);
  }
  const byKey = new Map<string, typeof events>();
  for (const event of events) byKey.set(event.key, [...(byKey.get(event.key) ?? []), event]);
  for (const [key, keyed] of byKey) {
    keyed.sort((a, b) => a.ts - b.ts);
    let session: typeof events = [];
    const close = () => {
      const first = session[0];
      const last = session.at(-1);
      if (first === undefined || last === undefined) return;
      results.set(`session/${key}/${first.ts}`, {
        kind: 'session',
        key,
        start: first.ts,
        end: last.ts + 300,
        count: session.length,
        sum: session.reduce((sum, event) => sum + event.id, 0),
      });
    };
    for (const event of keyed) {
      const previous = session.at(-1);
      if (previous !== undefined && event.ts - previous.ts > 300) {
        close();
        session = [];
      }
      session.push(event);
    }
    close();
  }
  return [...results.values()];
}

describe('event time', () => {
  test('the same input in different arrival orders, at parallelism 1 and 2: the same tumbling, sliding and session windows', async () => {
    const count = 4000;
    const expected = canonical(expectedWindows(count));
    const runs: { seed: number; parallelism: number }[] = [
      { seed: 1, parallelism: 2 },
      { seed: 2, parallelism: 2 },
      { seed: 3, parallelism: 1 },
    ];
    for (const { seed, parallelism } of runs) {
      const folder = await newFolder();
      process.env.SW_OUTPUT = join(folder, 'out');
      process.env.SW_COUNT = String(count);
      process.env.SW_SEED = String(seed);
      await runJob({
        job: join(jobs, 'shuffled-windows-job.ts'),
        config: { parallelism, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
      });
      const actual = canonical(readCommitted<WindowResult>(join(folder, 'out')));
      assert.equal(actual.length, expected.length, `seed ${seed}, parallelism ${parallelism}: as many windows as expected`);
      assert.deepEqual(actual, expected, `seed ${seed}, parallelism ${parallelism}`);
    }
  });

  test('records past the allowed lateness go to the late side output, counted; windows plus late output hold every record once', async () => {
    const count = 3000;
    const stragglers = Array.from({ length: count }, (_, id) => lateEventOf(id)).filter((event) => event.id % 100 === 50);
    for (const sideOutput of [true, false]) {
      const folder = await newFolder();
      process.env.LD_OUTPUT = join(folder, 'out');
      process.env.LD_COUNT = String(count);
      process.env.LD_SIDE_OUTPUT = sideOutput ? '1' : '0';
      const client = await startJob({
        job: join(jobs, 'late-data-job.ts'),
        config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
      });
      await client.result;
      const windows = readCommitted<LateWindowCount>(join(folder, 'out', 'windows'));
      const late = readCommitted<LateEvent>(join(folder, 'out', 'late'));
      const inWindows = windows.reduce((sum, window) => sum + window.count, 0);
      const dropped = client.status().vertices.reduce((sum, vertex) => sum + (vertex.operators['windows.numLateRecordsDropped'] ?? 0), 0);
      if (sideOutput) {
        assert.deepEqual(
          late.map((event) => event.id).sort((a, b) => a - b),
          stragglers.map((event) => event.id),
          'every straggler, once, in the late output',
        );
        assert.equal(dropped, 0);
      } else {
        assert.equal(late.length, 0);
        assert.equal(dropped, stragglers.length, 'without a late output, each one is counted in numLateRecordsDropped');
      }
      assert.equal(inWindows + stragglers.length, count, 'none lost: windows plus late records are every record');
      assert.equal(new Set(windows.map((window) => `${window.key}@${window.start}`)).size, windows.length, 'each window once');
    }
  });

  test('a window join of two sources at parallelism 2: every order with every payment of its account and window', async () => {
    const folder = await newFolder();
    const count = 4000;
    process.env.WJ_OUTPUT = join(folder, 'out');
    process.env.WJ_COUNT = String(count);
    await runJob({
      job: join(jobs, 'window-join-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
    });
    const expected = canonical(expectedWindowPairs(count));
    assert.ok(expected.length > count, `a join with many pairs (${expected.length})`);
    assert.deepEqual(canonical(readCommitted<WindowJoined>(join(folder, 'out'))), expected);
  });

  test('an idle split and an idle subtask do not stall the windows of the busy split once the idleness timeout passes', async () => {
    const folder = await newFolder();
    process.env.IS_OUTPUT = join(folder, 'out');
    process.env.IS_IDLENESS = '300';
    const client = await startJob({
      job: join(jobs, 'idle-split-job.ts'),
      config: { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } },
    });
    // Wait (no time limit but the test runner's) until windows of the busy split well past the quiet splits' last records have fired and been committed.
    let windows: IdleWindowCount[] = [];
    while (!windows.some((window) => window.split === 0 && window.start >= 3000)) {
      await sleep(100);
      windows = readCommitted<IdleWindowCount>(join(folder, 'out'));
    }
    await client.stopWithSavepoint();
    await client.result;
    windows = readCommitted<IdleWindowCount>(join(folder, 'out'));
    for (const window of windows.filter((candidate) => candidate.split === 0)) assert.equal(window.count, 100, `busy split window ${window.start} is complete`);
    assert.deepEqual(
      windows.filter((window) => window.split !== 0).sort((a, b) => a.split - b.split),
      [
        { split: 1, start: 0, count: 5 },
        { split: 2, start: 0, count: 5 },
      ],
      "the quiet splits' one window fired too",
    );
  });
});
