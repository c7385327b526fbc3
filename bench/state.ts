/**
 * Keyed state benchmark, Weir alone, no Kafka (issue 34): an unbounded generator over N keys ->
 * keyBy -> a small object per key in ValueState -> discarding sink (bench/jobs/keyed-state-job.ts),
 * parallelism 1, one worker, checkpoints every 2 s, the heap backend (`--backend disk`: the
 * disk backend, lmdb, its working folder in the run's temporary folder). Each size runs in its own
 * process (so its peak RSS is its own): first until every key has a value (the fill), then for a
 * measured window. Reports over that window: records/s, the process's peak RSS, the synchronous
 * pause per checkpoint (the longest time the keyed task stood still while the checkpoint was
 * pending: the gap between two records it processed, GC included) and the whole checkpoint
 * duration (p50/p99), and the bytes written per checkpoint.
 *
 *   npm run bench:state [-- --keys 1000000,5000000] [--large] [--seconds 30] [--label after] [--backend heap|disk]
 *                       [--incremental | --modes full,incremental] [--max-changes <n>] [--rate <records/s>] [--young-mb <MB>] [--memory-limit <MB>]
 *                       [--flink [--jvm-opts "-Xmx2g"]]
 * `--memory-limit`: each case's process runs in a memory cgroup of that size (Linux, root;
 * bench/memory-cgroup.ts): its own memory and the page cache it uses together (the kernel drops
 * clean file pages at the limit; a process whose own memory does not fit is killed).
 * `STATE_BENCH_MEMORY=<file>` in the environment: the worker thread appends what its memory is made
 * of every 2 s (RssAnon, V8 heap used and total, external, array buffers, malloced: bench/jobs/keyed-state-job.ts).
 * `--incremental`: checkpointing.incremental (`--max-changes`: checkpointing.incrementalMaxChanges); `--modes full,incremental`: each size with full, then
 * with incremental checkpoints (each in a process of its own), side by side in one table; `--rate`:
 * the generator's records/s (default as fast as it goes), so a checkpoint interval changes only part
 * of the keys; "MB changed per interval" is, per checkpoint, the keys the records since the trigger of
 * the checkpoint it builds on touched, at a key's bytes in the canonical format (canonicalBytesPerKey).
 * `--flink` adds Apache Flink's RocksDB backend with incremental checkpoints on the same job, per size
 * (bench/state-flink.ts; Maven builds the peer on first use). Each case also times its restore: the
 * job started again from its latest checkpoint. `--large` adds 10M keys. Writes (or replaces) the section `--label` (default "latest") of
 * bench/results/state.md.
 *   npm run bench:state -- --micro [--keys 1000000] [--ops 1000000] [--backend heap,disk]
 * measures the per-record get/put cost of each backend alone, no job (bench/state-micro.ts).
 *   npm run bench:state -- --snapshots [--keys 1000000] [--changed 100000] [--backend disk,heap]
 * measures what a full and an incremental checkpoint cost the task, no job (bench/state-incremental.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { weirV8Flags } from '../scripts/weir-v8-flags.ts';
import type { EnvironmentConfigInput } from '../src/core/config/environment-config.ts';
import { valueState } from '../src/core/state/state-descriptors.ts';
import { startJob } from '../src/runtime/jobmaster/job-master.ts';
import { HeapKeyedStateBackend } from '../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../src/state/key-group-range.ts';
import { markdownTable } from './compare/report.ts';
import { createMemoryCgroup } from './memory-cgroup.ts';
import { rssAnonMb } from './rss-anon-mb.ts';
import { runFlinkStateCase } from './state-flink.ts';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000,5000000' },
    large: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '30' },
    label: { type: 'string', default: 'latest' },
    case: { type: 'string' },
    backend: { type: 'string', default: 'heap' },
    incremental: { type: 'boolean', default: false },
    modes: { type: 'string' },
    rate: { type: 'string' },
    'max-changes': { type: 'string' },
    micro: { type: 'boolean', default: false },
    ops: { type: 'string' },
    snapshots: { type: 'boolean', default: false },
    flink: { type: 'boolean', default: false },
    'jvm-opts': { type: 'string' },
    changed: { type: 'string' },
    'young-mb': { type: 'string' },
    'memory-limit': { type: 'string' },
  },
});
if (values.snapshots) {
  // Full against incremental checkpoints, no job: bench/state-incremental.ts with the same flags.
  const args = [join(import.meta.dirname, 'state-incremental.ts'), '--keys', values.keys.split(',')[0] as string];
  args.push('--backend', values.backend === 'heap' ? 'disk,heap' : values.backend);
  if (values.changed !== undefined) args.push('--changed', values.changed);
  const child = spawn(process.execPath, [...process.execArgv, ...args], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  process.exit(code ?? 1);
}
if (values.micro) {
  // The per-record cost of each backend, no job: bench/state-micro.ts with the same flags.
  const args = [
    join(import.meta.dirname, 'state-micro.ts'),
    '--keys',
    values.keys.split(',')[0] as string,
    '--backend',
    values.backend === 'heap' ? 'heap,disk' : values.backend,
  ];
  if (values.ops !== undefined) args.push('--ops', values.ops);
  const child = spawn(process.execPath, [...process.execArgv, ...args], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  process.exit(code ?? 1);
}
if (values.backend !== 'heap' && values.backend !== 'disk') throw new Error(`--backend is heap or disk, not ${values.backend}`);
const stateBackend = values.backend;
/** Full and/or incremental checkpoints, one run each per size. */
const modes = (values.modes ?? (values.incremental ? 'incremental' : 'full')).split(',');
for (const mode of modes) if (mode !== 'full' && mode !== 'incremental') throw new Error(`--modes lists full and incremental, not ${mode}`);
const seconds = Number(values.seconds);
const job = join(import.meta.dirname, 'jobs', 'keyed-state-job.ts');
const results = join(import.meta.dirname, 'results', 'state.md');
const log = (line: string) => process.stderr.write(`${line}\n`);
const now = () => performance.timeOrigin + performance.now();
const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? undefined : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface CaseResult {
  keys: number;
  fillSeconds: number;
  recordsPerSecond: number;
  peakRssMb: number;
  /** The most anonymous memory the process held (RssAnon, sampled): the RSS less mapped file pages (lmdb's), which the kernel can drop. */
  peakAnonMb?: number;
  checkpoints: number;
  aborted: number;
  pauseMs: number[];
  /** The same pauses less the GC pauses inside them: what the snapshot itself cost. */
  pauseWithoutGcMs: number[];
  /** Per checkpoint, the longest synchronous and asynchronous parts of any task, as the tasks measured them (none before they published them). */
  taskSyncMs: number[];
  taskAsyncMs: number[];
  /** The longest GC pause of the worker thread in the window. */
  gcMaxMs: number | undefined;
  durationMs: number[];
  bytes: number[];
  /**
   * Per checkpoint of `bytes`, the keys the records between the trigger of the checkpoint it builds
   * on (the one completed before it) and its own touched (the generator cycles through the keys, so
   * at most every key); absent for Flink's peer.
   */
  changedKeys?: number[];
  /** The job started again on its storage: until its tasks run (their state read back). */
  restoreMs: number | undefined;
  /** The process's anonymous memory through the restore (sampled every 100 ms): its peak, and at the restore's start. */
  restoreAnonMb?: { peak: number; before: number };
  /** The keyed task's restore as it measured it (SUBTASK_RESTORE_CHANNEL): reading the files, opening the backend on them (absent for Flink's peer and code without the channel). */
  taskRestore?: { readMs: number; openMs: number; bytes: number; files: number };
  /** Bases the disk backend wrote beside its chain that ended in the window: their bytes and how long each took (absent before the code had them). */
  basesBeside?: { bytes: number; ms: number }[];
}

/** One size, in this process: fill, then measure. */
async function runCase(keys: number): Promise<CaseResult> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bench-state-'));
  const stallsFile = join(folder, 'stalls.txt');
  const gcFile = join(folder, 'gc.txt');
  const tasksFile = join(folder, 'tasks.txt');
  const basesFile = join(folder, 'bases.txt');
  const restoresFile = join(folder, 'restores.txt');
  Object.assign(process.env, {
    STATE_BENCH_KEYS: String(keys),
    STATE_BENCH_STALLS: stallsFile,
    STATE_BENCH_GC: gcFile,
    STATE_BENCH_TASKS: tasksFile,
    STATE_BENCH_BASES: basesFile,
    STATE_BENCH_RESTORES: restoresFile,
  });
  if (values.rate !== undefined) process.env.STATE_BENCH_RATE = values.rate;
  const completed: { id: number; at: number; durationMs: number; bytes: number }[] = [];
  let aborted = 0;
  let measuring = false;
  const config: EnvironmentConfigInput = {
    parallelism: 1,
    workers: 1,
    checkpointing: {
      interval: '2s',
      storage: join(folder, 'checkpoints'),
      incremental: values.incremental,
      ...(values['max-changes'] === undefined ? {} : { incrementalMaxChanges: Number(values['max-changes']) }),
    },
    workerHeap: { oldGenerationMb: 16384, ...(values['young-mb'] === undefined ? {} : { youngGenerationMb: Number(values['young-mb']) }) },
    stateBackend,
    stateDir: join(folder, 'state'),
  };
  let peakAnonMb = 0;
  const sampleAnon = setInterval(() => {
    peakAnonMb = Math.max(peakAnonMb, rssAnonMb());
  }, 100);
  try {
    const client = await startJob({
      job,
      config,
      log: () => {},
      onEvent: (event) => {
        if (event.type === 'checkpoint-completed') completed.push({ id: event.checkpointId, at: now(), durationMs: event.durationMs, bytes: event.bytes });
        if (event.type === 'checkpoint-aborted' && measuring) aborted++;
      },
    });
    const sinkRecords = () => client.status().vertices.at(-1)?.totalRecordsIn ?? 0;
    // The records through the sink over time (every 100 ms), to tell how many a checkpoint interval processed.
    const timeline: [number, number][] = [[now(), 0]];
    const sampleRecords = setInterval(() => timeline.push([now(), sinkRecords()]), 100);
    const filling = now();
    while (sinkRecords() < keys) {
      const state = client.status().state;
      if (state !== 'starting' && state !== 'running') throw new Error(`the job is ${state}: ${client.status().failure?.message ?? ''}`);
      await sleep(200);
    }
    const start = now();
    const fillSeconds = (start - filling) / 1000;
    const startRecords = sinkRecords();
    measuring = true;
    await sleep(seconds * 1000);
    const end = now();
    const records = sinkRecords() - startRecords;
    measuring = false;
    clearInterval(sampleRecords);
    await client.cancel();
    const peakRssMb = process.resourceUsage().maxRSS / 1024;
    clearInterval(sampleAnon);
    // Checkpoints triggered after the fill and completed in the window.
    const window = completed.filter((checkpoint) => checkpoint.at - checkpoint.durationMs >= start && checkpoint.at <= end);
    const rowsOf = async (file: string) =>
      existsSync(file)
        ? (await readFile(file, 'utf8'))
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => line.split(' ').map(Number))
        : [];
    const stalls = (await rowsOf(stallsFile)) as [number, number][];
    const gcs = (await rowsOf(gcFile)) as [number, number, number][];
    const tasks = await rowsOf(tasksFile);
    const bases = (await rowsOf(basesFile)) as [number, number, number][];
    /** The longest sync and async parts of any task of checkpoint `id`, as the tasks measured them. */
    const taskParts = (id: number) => {
      const own = tasks.filter((row) => row[0] === id);
      return own.length === 0 ? undefined : ([Math.max(...own.map((row) => row[2] as number)), Math.max(...own.map((row) => row[3] as number))] as const);
    };
    /** The GC time inside [from, to]. */
    const gcIn = (from: number, to: number) => {
      let total = 0;
      for (const [start, duration] of gcs) total += Math.max(0, Math.min(to, start + duration) - Math.max(from, start));
      return total;
    };
    const pauses = window.map((checkpoint) => {
      const triggered = checkpoint.at - checkpoint.durationMs;
      let longest = 0;
      let longestWithoutGc = 0;
      for (const [stallEnd, gap] of stalls) {
        if (stallEnd < triggered || stallEnd - gap > checkpoint.at) continue;
        longest = Math.max(longest, gap);
        longestWithoutGc = Math.max(longestWithoutGc, gap - gcIn(stallEnd - gap, stallEnd));
      }
      return [longest, longestWithoutGc] as const;
    });
    // The task's stalls in the window, told apart by whether a base beside the chain was being written then.
    const besideSpans = bases.map(([at, , ms]) => [at - ms, at] as const);
    const windowStalls = stalls.filter(([stallEnd]) => stallEnd >= start && stallEnd <= end);
    const during = windowStalls.filter(([stallEnd, gap]) => besideSpans.some(([from, to]) => stallEnd >= from && stallEnd - gap <= to)).map(([, gap]) => gap);
    const outside = windowStalls.filter(([stallEnd, gap]) => !besideSpans.some(([from, to]) => stallEnd >= from && stallEnd - gap <= to)).map(([, gap]) => gap);
    const longest = (gaps: number[]) =>
      gaps
        .toSorted((a, b) => b - a)
        .slice(0, 5)
        .map(Math.round)
        .join(', ');
    log(`  stalls while a base beside was written: ${during.length} (longest ${longest(during)}); otherwise: ${outside.length} (longest ${longest(outside)})`);
    const gcPauses = gcs.filter(([at]) => at >= start && at <= end).map(([, duration]) => duration);
    // The longest GC pauses of the window and their kind (perf_hooks: 1 scavenge, 2 minor mark-sweep, 4 mark-compact (major), 8 incremental marking, 16 weak callbacks).
    const longestGc = gcs.filter(([at]) => at >= start && at <= end).toSorted((a, b) => (b[1] as number) - (a[1] as number));
    log(
      `  longest GC pauses (ms, kind): ${longestGc
        .slice(0, 6)
        .map(([, duration, kind]) => `${Math.round(duration as number)} (${kind})`)
        .join(', ')}`,
    );
    const result: CaseResult = {
      keys,
      fillSeconds,
      recordsPerSecond: records / ((end - start) / 1000),
      peakRssMb,
      peakAnonMb,
      restoreMs: undefined,
      checkpoints: window.length,
      aborted,
      pauseMs: pauses.map(([withGc]) => withGc),
      pauseWithoutGcMs: pauses.map(([, withoutGc]) => withoutGc),
      taskSyncMs: window.flatMap((checkpoint) => taskParts(checkpoint.id)?.[0] ?? []),
      taskAsyncMs: window.flatMap((checkpoint) => taskParts(checkpoint.id)?.[1] ?? []),
      gcMaxMs: Math.max(0, ...gcPauses),
      durationMs: window.map((checkpoint) => checkpoint.durationMs),
      bytes: window.map((checkpoint) => checkpoint.bytes),
      basesBeside: bases.filter(([at, bytes]) => at >= start && at <= end && bytes >= 0).map(([, bytes, ms]) => ({ bytes, ms })),
      changedKeys: window.map((checkpoint) => {
        const previous = completed.filter((other) => other.id < checkpoint.id).at(-1);
        const from = previous === undefined ? 0 : recordsAt(timeline, previous.at - previous.durationMs);
        return Math.min(keys, recordsAt(timeline, checkpoint.at - checkpoint.durationMs) - from);
      }),
    };
    // What the window measured, before the restore: a restore the process does not survive (out of memory in a cgroup) leaves it.
    if (values.case !== undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
    // The restore: the job started again on its storage resumes from its latest checkpoint; it runs
    // once every task is open (its state read back; the disk backend's loaded into a fresh store).
    const restoring = now();
    // The process's own memory through the restore: its peak, and what it held when the restore began
    // (what the window's job left: glibc keeps freed memory), so the restore's own share shows.
    const anonBefore = rssAnonMb();
    let restorePeakAnonMb = anonBefore;
    const sampleRestoreAnon = setInterval(() => {
      restorePeakAnonMb = Math.max(restorePeakAnonMb, rssAnonMb());
    }, 100);
    const again = await startJob({ job, config, log: () => {} });
    while (again.status().state !== 'running') {
      const state = again.status().state;
      if (state !== 'starting') throw new Error(`the restored job is ${state}: ${again.status().failure?.message ?? ''}`);
      await sleep(20);
    }
    result.restoreMs = now() - restoring;
    clearInterval(sampleRestoreAnon);
    result.restoreAnonMb = { peak: Math.max(restorePeakAnonMb, rssAnonMb()), before: anonBefore };
    const [readMs, openMs, bytes, files] = existsSync(restoresFile)
      ? ((await readFile(restoresFile, 'utf8')).trim().split('\n').at(-1)?.split(' ').map(Number) ?? [])
      : [];
    if (readMs !== undefined && openMs !== undefined && bytes !== undefined) result.taskRestore = { readMs, openMs, bytes, files: files ?? 0 };
    await again.cancel();
    return result;
  } finally {
    clearInterval(sampleAnon);
    await rm(folder, { recursive: true, force: true });
  }
}

/** The records through the sink at time `at`, interpolated between the samples of `timeline`. */
function recordsAt(timeline: readonly [number, number][], at: number): number {
  const after = timeline.findIndex(([time]) => time >= at);
  if (after === -1) return timeline.at(-1)?.[1] ?? 0;
  if (after === 0) return timeline[0]?.[1] ?? 0;
  const [t0, r0] = timeline[after - 1] as [number, number];
  const [t1, r1] = timeline[after] as [number, number];
  return r0 + ((r1 - r0) * (at - t0)) / Math.max(1, t1 - t0);
}

/**
 * What one key of the job's state takes in the canonical snapshot format (a key and its `{ count,
 * sum, last }`): the heap backend's full snapshot of 20,000 such keys, per key. The data a
 * checkpoint interval changed is its changed keys at this size.
 */
function canonicalBytesPerKey(keys: number): number {
  const sample = 20_000;
  const backend = new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'bench' });
  const state = backend.getState(valueState<{ count: number; sum: number; last: number }>('totals'));
  for (let i = 0; i < sample; i++) {
    backend.setCurrentKey(`key-${keys - 1 - i}`);
    state.update({ count: 9, sum: 54, last: keys * 9 - i });
  }
  const writer = backend.snapshotAsync();
  writer.runToEnd();
  return writer.result().byteLength / sample;
}

if (values.case !== undefined) {
  const result = await runCase(Number(values.case));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

/** Runs one size in a child process of its own and reads its result. */
function runChild(keys: number, incremental: boolean): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const flags = ['--case', String(keys), '--seconds', String(seconds), '--backend', stateBackend];
    if (incremental) flags.push('--incremental');
    if (values.rate !== undefined) flags.push('--rate', values.rate);
    if (values['max-changes'] !== undefined) flags.push('--max-changes', values['max-changes']);
    if (values['young-mb'] !== undefined) flags.push('--young-mb', values['young-mb']);
    // Each case's process runs as `weir run` does (its V8 flags; an explicit one on this command wins).
    const argv = [process.execPath, ...process.execArgv, ...weirV8Flags(), import.meta.filename, ...flags];
    const cgroup =
      values['memory-limit'] === undefined ? undefined : createMemoryCgroup(Number(values['memory-limit']), `weir-bench-state-${process.pid}-${keys}`);
    const { command, args } = cgroup?.wrap(argv) ?? { command: argv[0] as string, args: argv.slice(1) };
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (cgroup !== undefined) {
        log(`  memory cgroup of ${values['memory-limit']} MB: peak ${Math.round(cgroup.peakMb())} MB, the limit reached ${cgroup.limitHits()} times`);
        cgroup.remove();
      }
      const oom = signal === 'SIGKILL' && cgroup !== undefined ? ' (killed: out of memory in its cgroup)' : '';
      if (line === '') reject(new Error(`the ${keys}-key case exited with ${signal ?? `code ${code}`}${oom}`));
      else {
        if (code !== 0) log(`  the ${keys}-key case's restore did not finish: it exited with ${signal ?? `code ${code}`}${oom}`);
        resolve(JSON.parse(line) as CaseResult);
      }
    });
  });
}

const fmt = (value: number | undefined, digits = 0) =>
  value === undefined ? '-' : value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const sizes = values.keys.split(',').map(Number);
if (values.large) sizes.push(10_000_000);
const rows: string[][] = [];
for (const keys of sizes) {
  /** A full snapshot's bytes: the full run's largest checkpoint, once it ran. */
  let fullBytes: number | undefined;
  for (const mode of modes) {
    log(`${keys.toLocaleString('en')} keys, ${mode} checkpoints: filling, then ${seconds} s measured`);
    const result = await runChild(keys, mode === 'incremental');
    const row = rowOf(keys, values['memory-limit'] === undefined ? mode : `${mode}, ${values['memory-limit']} MB cgroup`, result, fullBytes);
    if (mode === 'full') fullBytes = result.bytes.length === 0 ? undefined : Math.max(...result.bytes);
    log(`  ${row.join(' | ')}`);
    rows.push(row);
  }
  if (values.flink) {
    // Flink's peer on the same job: RocksDB with incremental checkpoints (bench/state-flink.ts).
    log(`${keys.toLocaleString('en')} keys, Apache Flink 2.0, RocksDB, incremental checkpoints: filling, then ${seconds} s measured`);
    const jvmOpts = values['jvm-opts']?.split(/\s+/).filter((option) => option !== '') ?? [];
    const flink = await runFlinkStateCase(keys, seconds, { jvmOpts, log });
    const row = rowOf(keys, 'flink rocksdb incremental', { ...flink, aborted: 0, pauseWithoutGcMs: [], gcMaxMs: undefined }, fullBytes);
    log(`  ${row.join(' | ')}`);
    rows.push(row);
  }
}

/** One size's row of the table (`fullBytes`: a full snapshot's size, when measured). */
function rowOf(keys: number, mode: string, result: CaseResult, fullBytes: number | undefined): string[] {
  const pauses = result.pauseMs.toSorted((a, b) => a - b);
  const pausesWithoutGc = result.pauseWithoutGcMs.toSorted((a, b) => a - b);
  const taskSync = result.taskSyncMs.toSorted((a, b) => a - b);
  const taskAsync = result.taskAsyncMs.toSorted((a, b) => a - b);
  const durations = result.durationMs.toSorted((a, b) => a - b);
  const bytes = result.bytes.toSorted((a, b) => a - b);
  // The data each checkpoint's interval changed: its changed keys at the canonical bytes of a key.
  // (Flink's peer tells no intervals: the keys 2 s of records touch, at a full snapshot's bytes per key.)
  const perKey = canonicalBytesPerKey(keys);
  const changedBytes = result.changedKeys?.map((changedKeys) => changedKeys * perKey) ?? [];
  const changed =
    result.changedKeys === undefined
      ? (Math.min(keys, result.recordsPerSecond * 2) * (fullBytes ?? bytes.at(-1) ?? 0)) / keys
      : (percentile(
          changedBytes.toSorted((a, b) => a - b),
          0.5,
        ) ?? 0);
  const ratios = result.changedKeys === undefined ? [] : result.bytes.map((size, i) => size / (changedBytes[i] || 1)).toSorted((a, b) => a - b);
  const sum = (list: number[]) => list.reduce((total, value) => total + value, 0);
  const besideBytes = (result.basesBeside ?? []).map((base) => base.bytes);
  return [
    fmt(keys),
    mode,
    fmt(result.fillSeconds, 1),
    fmt(result.recordsPerSecond),
    fmt(result.peakRssMb),
    fmt(result.peakAnonMb),
    fmt(result.checkpoints),
    fmt(percentile(pauses, 0.5)),
    fmt(percentile(pauses, 0.99)),
    fmt(percentile(pausesWithoutGc, 0.5)),
    fmt(percentile(pausesWithoutGc, 0.99)),
    fmt(result.gcMaxMs),
    fmt(percentile(taskSync, 0.5), 1),
    fmt(percentile(taskSync, 0.99), 1),
    fmt(percentile(taskAsync, 0.5)),
    fmt(percentile(taskAsync, 0.99)),
    fmt(percentile(durations, 0.5)),
    fmt(percentile(durations, 0.99)),
    fmt((percentile(bytes, 0.5) ?? 0) / 1e6, 1),
    fmt((bytes.at(-1) ?? 0) / 1e6, 1),
    fmt(changed / 1e6, 1),
    fmt(result.changedKeys === undefined ? (percentile(bytes, 0.5) ?? 0) / changed : percentile(ratios, 0.5), 2),
    fmt(result.changedKeys === undefined ? undefined : (sum(result.bytes) + sum(besideBytes)) / sum(changedBytes), 2),
    `${besideBytes.length} (${fmt(sum(besideBytes) / 1e6)} MB, ${fmt(Math.max(0, ...(result.basesBeside ?? []).map((base) => base.ms)))} ms)`,
    fmt(result.restoreMs),
    result.restoreAnonMb === undefined ? '-' : `${fmt(result.restoreAnonMb.peak)} (${fmt(result.restoreAnonMb.before)})`,
    result.taskRestore === undefined
      ? '-'
      : `${fmt(result.taskRestore.readMs + result.taskRestore.openMs)} (${fmt(result.taskRestore.readMs)} + ${fmt(result.taskRestore.openMs)}, ${fmt(result.taskRestore.bytes / 1e6)} MB in ${result.taskRestore.files})`,
  ];
}

const section = [
  `## ${values.label}`,
  '',
  `\`npm run bench:state -- ${process.argv.slice(2).join(' ')}\` (the ${stateBackend} backend, ${modes.join(' and ')} checkpoints${values.rate === undefined ? '' : `, ${values.rate} records/s`}), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, this machine (2 cores, shared), Node ${process.versions.node}.`,
  '',
  ...markdownTable(
    [
      'keys',
      'mode',
      'fill s',
      'records/s',
      'peak RSS MB',
      'peak anon MB',
      'checkpoints',
      'sync pause p50 ms',
      'sync pause p99 ms',
      'less GC p50 ms',
      'less GC p99 ms',
      'GC max ms',
      'task sync p50 ms',
      'task sync p99 ms',
      'task async p50 ms',
      'task async p99 ms',
      'checkpoint p50 ms',
      'checkpoint p99 ms',
      'MB per checkpoint p50',
      'MB max',
      'MB changed per interval',
      'p50 / changed',
      'all / changed',
      'bases beside (MB, longest ms)',
      'restore ms',
      'restore anon MB (peak, at start)',
      'task restore ms (read + open, MB in files)',
    ],
    rows,
  ),
  '',
].join('\n');
const intro = [
  '# Keyed state: checkpoints of the heap backend (issue 34)',
  '',
  'generator over N keys -> keyBy -> a small object per key ({ count, sum, last }) in ValueState -> discarding sink; parallelism 1, one worker thread, exactly-once checkpoints every 2 s to the local file system, the heap backend (`--backend disk`: the disk backend, lmdb). "mode": full checkpoints, or incremental ones (`--incremental`; `--modes full,incremental` runs both, each in a process of its own). Each size runs in a process of its own: first until every key has a value ("fill s"), then for the measured window (`--seconds`, default 30), over which everything is reported. records/s: through the sink. Peak RSS: the whole process (job master and worker thread); "peak anon": its anonymous memory alone (RssAnon, sampled every 100 ms), the RSS less mapped file pages (lmdb maps its file: those pages count in RSS, yet the kernel drops them under memory pressure; "-" for Flink). `--young-mb`: workerHeap.youngGenerationMb for the run. Sync pause: per checkpoint triggered and completed in the window, the longest time the keyed task stood still (the gap between two records it processed) while the checkpoint was pending; GC pauses in that time count too. "less GC": the same pause less the worker thread\'s GC pauses inside it (what the checkpoint itself cost the task); "GC max": the longest GC pause of the worker thread in the window, checkpoint or not. "task sync" and "task async": the synchronous part (snapshot hooks and the backends\' synchronous snapshots, up to the barrier going on) and the asynchronous part (serializing and writing the state, up to the acknowledgement) as the keyed task measured them (the diagnostics channel `weir:subtask-checkpoint`; "-" where the code measured has no such channel). Checkpoint: trigger to completion. MB per checkpoint: what the tasks acknowledged (p50, and the largest: a full snapshot); MB changed per interval (p50): per checkpoint, the keys the records between the trigger of the checkpoint it builds on and its own trigger touched (the generator cycles through the keys; records through the sink, sampled every 100 ms), at a key\'s bytes in the canonical format (the heap backend\'s full snapshot of 20,000 such keys; for Flink, 2 s of records at its largest checkpoint\'s bytes per key); p50 / changed: per checkpoint, what it wrote against what its interval changed, the median; all / changed: every byte the window\'s checkpoints wrote (full ones and bases too, and the bases written beside the chain that ended in the window) against all the data changed. Bases beside: the disk backend\'s bases written beside the chain (FLIP-158\'s materialization; not part of any checkpoint\'s bytes) that ended in the window, their MB and the longest one\'s duration. Restore ms: the job started again on its storage after the window, until its tasks run (every one has its state back; the disk backend\'s loaded into a fresh store). Restore anon: the process\'s anonymous memory through the restore, its peak and what it held as the restore began (what the window\'s job left, glibc keeping freed memory). Task restore: the keyed task\'s own restore as it measured it (the diagnostics channel `weir:subtask-restore`), what Flink\'s restore ms is: reading the checkpoint\'s files (a base\'s lmdb file streamed into the working folder) + opening the backend on them (the changes after the base applied), and the MB read in how many files (the base and the changes after it); "-" for Flink (its restore ms is the task\'s) and code without the channel. `--flink`: Apache Flink 2.0 on the same job (bench/state-flink.ts: RocksDB, incremental checkpoints, local execution in one JVM), measured the same way from its own log and files; its restore ms is the keyed task\'s INITIALIZING to RUNNING after a SIGKILL, and its sync pause counts the JVM\'s GC too (not told apart: the less-GC and GC columns stay empty).',
  '',
].join('\n');
const previous = existsSync(results) ? await readFile(results, 'utf8') : intro;
const sections = previous.split(/^(?=## )/m);
const kept = sections.slice(1).filter((part) => !part.startsWith(`## ${values.label}\n`));
const text = [intro.trimEnd(), ...kept.map((part) => part.trimEnd()), section.trimEnd()].join('\n\n');
await writeFile(results, `${text.trimEnd()}\n`);
process.stdout.write(`${section}\n`);
