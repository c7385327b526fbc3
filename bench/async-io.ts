/**
 * Async I/O throughput against capacity and latency, Weir alone, side by side in one run: one
 * subtask (parallelism 1, one worker, checkpoints every second, so records in flight are
 * snapshotted as they would be in a job) enriching datagen records through orderedWait.
 *
 * - capacity 1 -> 10 -> 100 -> 1000 at a lookup latency of 1, 10 and 50 ms (a timer): records/s,
 *   and the share of the ideal capacity / latency reached;
 * - orderedWait against unorderedWait when latencies vary (uniform 0-20 ms, capacity 100);
 * - a real HTTP service on loopback (capacity 10 and 100), where the client's own cost shows.
 *
 *   npm run bench:async [-- --quick]   (--quick: a third of the records)
 * Writes bench/results/async-io.md.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJob } from '../src/runtime/jobmaster/job-master.ts';
import { markdownTable } from './compare/report.ts';

const scale = process.argv.includes('--quick') ? 1 / 3 : 1;
const job = join(import.meta.dirname, 'jobs', 'async-io-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);
const fmt = (value: number, digits = 0) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Runs the job once with these settings; records/s from the moment its tasks run (the workers' start-up left out) to its end. */
async function runCase(records: number, env: Record<string, string>): Promise<number> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bench-async-'));
  Object.assign(process.env, { AB_RECORDS: String(records), AB_JITTER: '0', ...env });
  try {
    const client = await startJob({
      job,
      config: { parallelism: 1, workers: 1, checkpointing: { interval: '1s', storage: join(folder, 'checkpoints') } },
      log: () => {},
    });
    let started = performance.now();
    const running = setInterval(() => {
      if (client.status().state === 'starting') started = performance.now();
      else clearInterval(running);
    }, 5);
    await client.result;
    clearInterval(running);
    return records / ((performance.now() - started) / 1000);
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
    await rm(folder, { recursive: true, force: true });
  }
}

/** Enough records for about 3 s at the ideal rate, within bounds. */
const recordsFor = (ideal: number) => Math.round(Math.min(300_000, Math.max(60, ideal * 3)) * scale);

const lines = [
  '# Async I/O: throughput against capacity and latency',
  '',
  `\`npm run bench:async${scale < 1 ? ' -- --quick' : ''}\`, ${new Date().toISOString().slice(0, 10)}, this machine; one subtask, checkpoints every second; orderedWait unless said.`,
  '',
];

const gridRows: string[][] = [];
for (const latency of [1, 10, 50]) {
  for (const capacity of [1, 10, 100, 1000]) {
    const ideal = (capacity * 1000) / latency;
    const records = recordsFor(ideal);
    log(`latency ${latency} ms, capacity ${capacity}: ${records} records`);
    const rate = await runCase(records, { AB_LATENCY_MS: String(latency), AB_CAPACITY: String(capacity), AB_MODE: 'ordered' });
    gridRows.push([`${latency} ms`, fmt(capacity), fmt(records), fmt(rate), fmt(ideal), fmt(rate / ideal, 2)]);
  }
}
lines.push(
  '## Capacity and latency (a timer as the lookup)',
  '',
  "ideal = capacity / latency: what waiting alone allows. Where the ideal passes what one thread does with a record, the rate levels off: that is the operator's and the runtime's own cost.",
  '',
  ...markdownTable(['latency', 'capacity', 'records', 'records/s', 'ideal', 'share of ideal'], gridRows),
  '',
);

const orderRows: string[][] = [];
for (const mode of ['ordered', 'unordered']) {
  const records = recordsFor(10_000);
  log(`${mode}, jittered latency`);
  const rate = await runCase(records, { AB_LATENCY_MS: '10', AB_JITTER: '1', AB_CAPACITY: '100', AB_MODE: mode });
  orderRows.push([mode === 'ordered' ? 'orderedWait' : 'unorderedWait', fmt(records), fmt(rate)]);
}
const orderedRate = Number((orderRows[0] as string[])[2]?.replaceAll(',', ''));
lines.push(
  '## Ordered against unordered (latency uniform 0-20 ms, capacity 100)',
  '',
  'A slow answer holds back the ordered results behind it, and so the capacity; unordered lets the others out.',
  '',
  ...markdownTable(
    ['mode', 'records', 'records/s', 'ratio'],
    orderRows.map((row) => [...row, fmt(Number(row[2]?.replaceAll(',', '')) / orderedRate, 2)]),
  ),
  '',
);

const server = createServer((_request, response) => {
  setTimeout(() => response.end('{}'), 5);
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const httpRows: string[][] = [];
for (const capacity of [10, 100]) {
  const ideal = (capacity * 1000) / 5;
  const records = recordsFor(Math.min(ideal, 10_000));
  log(`HTTP, capacity ${capacity}`);
  const rate = await runCase(records, {
    AB_SERVICE: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    AB_CAPACITY: String(capacity),
    AB_MODE: 'ordered',
  });
  httpRows.push([fmt(capacity), fmt(records), fmt(rate), fmt(ideal), fmt(rate / ideal, 2)]);
}
server.closeAllConnections();
server.close();
lines.push(
  '## A real HTTP service on loopback (answers after 5 ms; fetch, keep-alive)',
  '',
  "The service runs in the benchmark's own process, on the same two cores as the job.",
  '',
  ...markdownTable(['capacity', 'records', 'records/s', 'ideal', 'share of ideal'], httpRows),
  '',
);

const text = lines.join('\n');
await writeFile(join(import.meta.dirname, 'results', 'async-io.md'), text);
process.stdout.write(`${text}\n`);
