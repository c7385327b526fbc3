/**
 * The state benchmark's job (bench/state.ts): an unbounded generator over STATE_BENCH_KEYS keys ->
 * keyBy -> a small object per key in ValueState -> discarding sink.
 *
 * The keyed function also measures how long its task stood still: the gap between two records it
 * processes. Every gap of STALL_MS or more is appended to STATE_BENCH_STALLS as `end-ms gap-ms`
 * (absolute times, so the bench can lay them over the checkpoints), and every GC pause of GC_MS or
 * more of its worker thread to STATE_BENCH_GC as `start-ms duration-ms` (so the bench can tell the
 * snapshot's pauses from the collector's), and each task's checkpoint durations as the task measured
 * them (SUBTASK_CHECKPOINT_CHANNEL) to STATE_BENCH_TASKS as `checkpoint-id vertex sync-ms async-ms`,
 * and each keyed backend a task restored (SUBTASK_RESTORE_CHANNEL) to STATE_BENCH_RESTORES as
 * `read-ms open-ms bytes files` (subscribed when the module loads: a restore comes before `open`).
 */
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { defineJob } from '../../src/api/define-job.ts';
import { dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import { valueState } from '../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../src/core/state/state-types.ts';
import { rssAnonMb } from '../rss-anon-mb.ts';

interface Totals {
  count: number;
  sum: number;
  last: number;
}

/** SUBTASK_CHECKPOINT_CHANNEL of subtask-checkpoint-coordinator.ts, by name: the bench also runs against code without it. */
const SUBTASK_CHECKPOINT_CHANNEL = 'weir:subtask-checkpoint';
/** SUBTASK_MATERIALIZATION_CHANNEL, by name: the bases written beside the chain, to STATE_BENCH_BASES as `end-ms bytes ms` (bytes -1: failed). */
const SUBTASK_MATERIALIZATION_CHANNEL = 'weir:subtask-materialization';
/** SUBTASK_RESTORE_CHANNEL of stream-task-state-initializer.ts, by name. */
const SUBTASK_RESTORE_CHANNEL = 'weir:subtask-restore';
const STALL_MS = 5;
const GC_MS = 2;
let observingGc = false;

/** Records the worker thread's GC pauses and its tasks' checkpoint durations (once per thread). */
function observeGc(file: string | undefined, tasksFile: string | undefined, basesFile: string | undefined): void {
  if (observingGc || file === undefined) return;
  observingGc = true;
  if (basesFile !== undefined) {
    subscribe(SUBTASK_MATERIALIZATION_CHANNEL, (message) => {
      const { bytes, ms } = message as { bytes?: number; ms: number };
      appendFileSync(basesFile, `${performance.timeOrigin + performance.now()} ${bytes ?? -1} ${ms}\n`);
    });
  }
  if (tasksFile !== undefined) {
    subscribe(SUBTASK_CHECKPOINT_CHANNEL, (message) => {
      const { checkpointId, vertexId, syncMs, asyncMs } = message as { checkpointId: number; vertexId: number; syncMs: number; asyncMs: number };
      appendFileSync(tasksFile, `${checkpointId} ${vertexId} ${syncMs} ${asyncMs}\n`);
    });
  }
  new PerformanceObserver((list) => {
    let lines = '';
    for (const entry of list.getEntries())
      if (entry.duration >= GC_MS)
        lines += `${performance.timeOrigin + entry.startTime} ${entry.duration} ${(entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0}\n`;
    if (lines !== '') appendFileSync(file, lines);
  }).observe({ entryTypes: ['gc'] });
}

/**
 * Every 2 s, what the worker thread's memory is made of, to STATE_BENCH_MEMORY as `ms rss-anon-MB
 * heap-used-MB heap-total-MB external-MB array-buffers-MB malloced-MB` (the process's RssAnon; the
 * rest this thread's isolate), so the bench tells the V8 heap from buffers and native memory.
 */
function sampleMemory(file: string | undefined): void {
  if (file === undefined) return;
  const mb = (bytes: number) => (bytes / 1048576).toFixed(0);
  setInterval(() => {
    const usage = process.memoryUsage();
    const heap = getHeapStatistics();
    appendFileSync(
      file,
      `${Date.now()} ${rssAnonMb().toFixed(0)} ${mb(usage.heapUsed)} ${mb(usage.heapTotal)} ${mb(usage.external)} ${mb(usage.arrayBuffers)} ${mb(heap.malloced_memory)}\n`,
    );
  }, 2000).unref();
}

// From the module's load in each worker thread: a restore comes before `open`.
sampleMemory(process.env.STATE_BENCH_MEMORY);

const restoresFile = process.env.STATE_BENCH_RESTORES;
if (restoresFile !== undefined)
  subscribe(SUBTASK_RESTORE_CHANNEL, (message) => {
    const { readMs, openMs, bytes, files } = message as { readMs: number; openMs: number; bytes: number; files: number };
    appendFileSync(restoresFile, `${readMs} ${openMs} ${bytes} ${files}\n`);
  });

export default defineJob({
  name: 'bench-keyed-state',
  build(env) {
    const keys = Number(process.env.STATE_BENCH_KEYS ?? 1_000_000);
    const rate = process.env.STATE_BENCH_RATE === undefined ? undefined : Number(process.env.STATE_BENCH_RATE);
    const stalls = process.env.STATE_BENCH_STALLS;
    let totals: ValueState<Totals>;
    let lastAt = 0;
    env
      .fromSource(dataGenSource({ keys, ...(rate === undefined ? {} : { recordsPerSecond: rate }) }), { uid: 'generator' })
      .keyBy((record) => record.key)
      .process<number>(
        {
          open(context) {
            observeGc(process.env.STATE_BENCH_GC, process.env.STATE_BENCH_TASKS, process.env.STATE_BENCH_BASES);
            totals = context.getState(valueState<Totals>('totals'));
          },
          processElement(record, _context, out) {
            const now = performance.timeOrigin + performance.now();
            if (lastAt !== 0 && now - lastAt >= STALL_MS && stalls !== undefined) appendFileSync(stalls, `${now} ${now - lastAt}\n`);
            lastAt = now;
            const current = totals.value();
            totals.update(
              current === undefined
                ? { count: 1, sum: record.amount, last: record.seq }
                : { count: current.count + 1, sum: current.sum + record.amount, last: record.seq },
            );
            out.collect(record.amount);
          },
        },
        { uid: 'totals' },
      )
      .sinkTo(discardingSink<number>(), { uid: 'discard' });
  },
});
