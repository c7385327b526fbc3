/**
 * The Flink peer of `npm run bench:state` (issue 34): Weir's keyed-state job on Apache Flink 2.0
 * (bench/peers/flink, FlinkStateJob: a generator over N keys -> keyBy -> {count, sum, last} in
 * ValueState -> discarding sink, parallelism 1, checkpoints every 2 s), by default on the RocksDB
 * backend with incremental checkpoints, local execution in one JVM. Measured as bench/state.ts
 * measures Weir: the fill (every key has a value), then a window of `seconds`: records/s, peak RSS
 * (the JVM's VmHWM), the keyed task's longest stall per checkpoint (its own gaps of 5 ms or more,
 * GC included: the JVM's GC is not told apart), the task's synchronous and asynchronous parts and
 * the checkpoint's duration (Flink's own log lines), and the bytes each checkpoint added to its
 * folder (new files: RocksDB's shared SST files and the checkpoint's own). Then the JVM is
 * SIGKILLed and started again from its latest checkpoint: "restore ms" is the keyed task's time
 * from INITIALIZING to RUNNING (Flink's restore of its state), "restart ms" the new JVM's launch
 * to its first record.
 *
 *   node bench/state-flink.ts [--keys 1000000] [--seconds 30] [--backend rocksdb|hashmap] [--jvm-opts "-Xmx2g"]
 * prints one JSON result per size; bench/state.ts (`--flink`) puts them beside Weir's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { buildPeer, javaClasspath, PeakRss, stopProcess } from './compare/systems.ts';

/** One size's figures, in bench/state.ts's terms (restore figures added). */
export interface FlinkStateResult {
  keys: number;
  fillSeconds: number;
  recordsPerSecond: number;
  peakRssMb: number;
  checkpoints: number;
  pauseMs: number[];
  taskSyncMs: number[];
  taskAsyncMs: number[];
  durationMs: number[];
  bytes: number[];
  /** The keyed task's INITIALIZING -> RUNNING after the SIGKILL: its state restored. */
  restoreMs: number | undefined;
  /** The new JVM's launch to its first record. */
  restartMs: number | undefined;
}

const INTERVAL_MS = 2000;
const KEYED_TASK = /^KeyedProcess/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One JVM of the job: its counters and log lines as they come. */
class FlinkStateProcess {
  readonly child: ChildProcess;
  readonly startedAt = Date.now();
  readonly rss: PeakRss;
  processed = 0;
  firstRecordAt: number | undefined;
  readonly completed: { id: number; at: number; durationMs: number }[] = [];
  readonly sync = new Map<number, number>();
  readonly async = new Map<number, number>();
  readonly keyedStates: { at: number; to: string }[] = [];
  readonly errors: string[] = [];

  constructor(keys: number, folder: string, backend: string, jvmOpts: string[]) {
    const args = [
      ...jvmOpts,
      '-Dlog4j2.configurationFile=log4j2-state.properties',
      '-cp',
      javaClasspath('flink'),
      'dev.weir.bench.FlinkStateJob',
      String(keys),
      String(INTERVAL_MS),
      join(folder, 'checkpoints'),
      join(folder, 'stalls.txt'),
      backend,
    ];
    this.child = spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.rss = new PeakRss(this.child.pid as number);
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const [what, at, count] = line.split(' ');
      if (what === 'processed') this.processed = Number(count);
      else if (what === 'first-record') this.firstRecordAt = Number(at);
    });
    createInterface({ input: this.child.stderr as NodeJS.ReadableStream }).on('line', (line) => this.#logLine(line));
  }

  #logLine(line: string): void {
    const at = Number(/^\[(\d+)\]/.exec(line)?.[1]);
    const message = line.replace(/^\[\d+\] \w+ /, '');
    let match = /^Completed checkpoint (\d+) for job \w+ \((\d+) bytes, checkpointDuration=(\d+) ms/.exec(message);
    if (match !== null) {
      this.completed.push({ id: Number(match[1]), at, durationMs: Number(match[3]) });
      return;
    }
    match = /^(.*?) - finished synchronous part of checkpoint (\d+)\. Alignment duration: \d+ ms, snapshot duration (\d+) ms/.exec(message);
    if (match !== null && KEYED_TASK.test(match[1] as string)) {
      this.sync.set(Number(match[2]), Number(match[3]));
      return;
    }
    match = /^(.*?) - finished asynchronous part of checkpoint (\d+)\. Asynchronous duration: (\d+) ms/.exec(message);
    if (match !== null && KEYED_TASK.test(match[1] as string)) {
      this.async.set(Number(match[2]), Number(match[3]));
      return;
    }
    match = /^(KeyedProcess.*?) switched from \w+ to (\w+)\./.exec(message);
    if (match !== null) {
      this.keyedStates.push({ at, to: match[2] as string });
      return;
    }
    if (/ (ERROR|WARN) /.test(line) && /Exception|failed/i.test(line)) this.errors.push(line);
  }

  failedWith(): string | undefined {
    return this.child.exitCode !== null || this.child.signalCode !== null
      ? `the Flink JVM exited (${this.child.exitCode ?? this.child.signalCode}): ${this.errors.slice(-3).join(' | ')}`
      : undefined;
  }

  async kill(): Promise<void> {
    this.rss.stop();
    await stopProcess(this.child, 'SIGKILL', 1000);
  }
}

/** Every file under `folder` with its size, by path. */
function filesUnder(folder: string, into = new Map<string, number>()): Map<string, number> {
  if (!existsSync(folder)) return into;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) filesUnder(path, into);
    else if (entry.isFile()) into.set(path, statSync(path).size);
  }
  return into;
}

/** One size: fill, measure, SIGKILL, restore. */
export async function runFlinkStateCase(
  keys: number,
  seconds: number,
  options: { backend?: string; jvmOpts?: string[]; log?: (line: string) => void } = {},
): Promise<FlinkStateResult> {
  const log = options.log ?? (() => {});
  const backend = options.backend ?? 'rocksdb';
  await buildPeer('flink', log);
  const folder = await mkdtemp(join(tmpdir(), 'weir-bench-state-flink-'));
  let run = new FlinkStateProcess(keys, folder, backend, options.jvmOpts ?? []);
  try {
    const filling = Date.now();
    while (run.processed < keys) {
      const failed = run.failedWith();
      if (failed !== undefined) throw new Error(failed);
      await sleep(200);
    }
    const start = Date.now();
    const startRecords = run.processed;
    // The bytes each checkpoint completed in the window added to the folder (new files only).
    let seen = filesUnder(join(folder, 'checkpoints'));
    const bytesOf = new Map<number, number>();
    let counted = run.completed.length;
    while (Date.now() - start < seconds * 1000) {
      await sleep(100);
      if (run.completed.length === counted) continue;
      counted = run.completed.length;
      const now = filesUnder(join(folder, 'checkpoints'));
      let added = 0;
      for (const [path, size] of now) if (!seen.has(path)) added += size;
      seen = now;
      bytesOf.set(run.completed.at(-1)?.id as number, added);
    }
    const end = Date.now();
    const records = run.processed - startRecords;
    const failed = run.failedWith();
    if (failed !== undefined) throw new Error(failed);
    await run.kill();
    const window = run.completed.filter((checkpoint) => checkpoint.at - checkpoint.durationMs >= start && checkpoint.at <= end);
    const stalls = existsSync(join(folder, 'stalls.txt'))
      ? (await readFile(join(folder, 'stalls.txt'), 'utf8'))
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => line.split(' ').map(Number) as [number, number])
      : [];
    const pauseMs = window.map((checkpoint) => {
      const triggered = checkpoint.at - checkpoint.durationMs;
      let longest = 0;
      for (const [stallEnd, gap] of stalls) if (stallEnd >= triggered && stallEnd - gap <= checkpoint.at) longest = Math.max(longest, gap);
      return longest;
    });
    const firstRun = run;
    // Restore: a new JVM from the latest checkpoint; its keyed task's INITIALIZING -> RUNNING.
    run = new FlinkStateProcess(keys, folder, backend, options.jvmOpts ?? []);
    const deadline = Date.now() + 600_000;
    while (run.firstRecordAt === undefined && Date.now() < deadline) {
      const failedAgain = run.failedWith();
      if (failedAgain !== undefined) throw new Error(failedAgain);
      await sleep(100);
    }
    const initializing = run.keyedStates.find((state) => state.to === 'INITIALIZING')?.at;
    const running = run.keyedStates.find((state) => state.to === 'RUNNING')?.at;
    return {
      keys,
      fillSeconds: (start - filling) / 1000,
      recordsPerSecond: records / ((end - start) / 1000),
      peakRssMb: firstRun.rss.peakKb / 1024,
      checkpoints: window.length,
      pauseMs,
      taskSyncMs: window.flatMap((checkpoint) => firstRun.sync.get(checkpoint.id) ?? []),
      taskAsyncMs: window.flatMap((checkpoint) => firstRun.async.get(checkpoint.id) ?? []),
      durationMs: window.map((checkpoint) => checkpoint.durationMs),
      bytes: window.flatMap((checkpoint) => bytesOf.get(checkpoint.id) ?? []),
      restoreMs: initializing !== undefined && running !== undefined ? running - initializing : undefined,
      restartMs: run.firstRecordAt === undefined ? undefined : run.firstRecordAt - run.startedAt,
    };
  } finally {
    await run.kill();
    await rm(folder, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      keys: { type: 'string', default: '1000000' },
      seconds: { type: 'string', default: '30' },
      backend: { type: 'string', default: 'rocksdb' },
      'jvm-opts': { type: 'string' },
    },
  });
  const jvmOpts = values['jvm-opts']?.split(/\s+/).filter((option) => option !== '') ?? [];
  for (const keys of values.keys.split(',').map(Number)) {
    const result = await runFlinkStateCase(keys, Number(values.seconds), {
      backend: values.backend,
      jvmOpts,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
}
