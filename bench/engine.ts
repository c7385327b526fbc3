/**
 * Engine benchmark (no Kafka): generator -> keyBy -> keyed running sum -> discarding sink, at
 * parallelism 1 and 2, with checkpoints off and every 100 ms, side by side in one run. Reports
 * records/s and checkpoint durations, and each case's throughput as a ratio of the first case.
 *
 *   npm run bench:engine [-- <records>]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJob } from '../src/runtime/jobmaster/job-master.ts';

const count = Number(process.argv[2] ?? 2_000_000);
process.env.BENCH_COUNT = String(count);
const job = join(import.meta.dirname, 'jobs', 'keyed-sum-discard-job.ts');

interface Row {
  name: string;
  recordsPerSecond: number;
  checkpoints: number;
  p50: number | undefined;
  max: number | undefined;
}

const rows: Row[] = [];
for (const parallelism of [1, 2]) {
  for (const checkpointing of [false, true]) {
    const folder = await mkdtemp(join(tmpdir(), 'weir-bench-'));
    const durations: number[] = [];
    const started = performance.now();
    await runJob({
      job,
      config: {
        parallelism,
        workers: 2,
        ...(checkpointing ? { checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } } : {}),
      },
      onEvent: (event) => {
        if (event.type === 'checkpoint-completed') durations.push(event.durationMs);
      },
    });
    const seconds = (performance.now() - started) / 1000;
    await rm(folder, { recursive: true, force: true });
    durations.sort((a, b) => a - b);
    rows.push({
      name: `parallelism ${parallelism}, checkpoints ${checkpointing ? 'every 100 ms' : 'off'}`,
      recordsPerSecond: count / seconds,
      checkpoints: durations.length,
      p50: durations[Math.floor(durations.length / 2)],
      max: durations.at(-1),
    });
  }
}

const base = rows[0]?.recordsPerSecond ?? 1;
console.log(`\n${count.toLocaleString('en')} records, generator -> keyBy -> keyed sum -> discard (times include start-up)\n`);
console.log('| case | records/s | ratio | checkpoints | checkpoint p50 ms | checkpoint max ms |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.name} | ${Math.round(row.recordsPerSecond).toLocaleString('en')} | ${(row.recordsPerSecond / base).toFixed(2)} | ${row.checkpoints} | ${row.p50 ?? '-'} | ${row.max ?? '-'} |`,
  );
}
