/**
 * PostgreSQL sink benchmark: rows/s into a real PostgreSQL (started by test/harness/postgres-server.ts:
 * initdb into a temporary folder, a free port, max_prepared_transactions 20), side by side in one
 * run, at parallelism 1 and 2:
 * - a plain batched `pg` loop (the limit): one connection per writer, multi-row INSERTs of the same
 *   batch size (a named prepared statement, autocommit, each awaited), append and upsert;
 * - Weir exactly-once (PREPARE TRANSACTION at each barrier, COMMIT PREPARED when the checkpoint
 *   completes), append and upsert;
 * - Weir at-least-once upsert (plain transactions committed at each barrier);
 * - Weir into a discarding sink: the same job without a database, the engine's own ceiling here.
 * Weir's job is generator -> keyBy(key) -> postgresSink (bench/jobs/postgres-sink-job.ts),
 * checkpoints every second; its rows/s are counted from the job running to its end (the final
 * commit included), its start-up (preflight, worker threads) apart. Each case's table is read back:
 * append must hold every record once, upsert every key once, and nothing may stay prepared.
 *
 * Each case runs `rounds` times, the rounds one after the other over every case; the best run counts.
 *
 *   npm run bench:postgres [-- <records per case> <rounds>]   (default 400000, 2)
 * Writes bench/results/postgres.md.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startJob } from '../src/runtime/jobmaster/job-master.ts';
import { startPostgres } from '../test/harness/postgres-server.ts';
import { markdownTable } from './compare/report.ts';
import { benchRow, POSTGRES_BENCH_TABLES } from './jobs/postgres-sink-job.ts';

const records = Number(process.argv[2] ?? 400_000);
const rounds = Number(process.argv[3] ?? 2);
const KEYS = 50_000;
const BATCH = 500;
const job = join(import.meta.dirname, 'jobs', 'postgres-sink-job.ts');
const log = (line: string) => process.stderr.write(`${line}\n`);
const fmt = (value: number, digits = 0) => value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

type Mode = 'append' | 'upsert' | 'discard';
interface Case {
  name: string;
  mode: Mode;
  guarantee?: 'exactly-once' | 'at-least-once';
}
interface Result {
  rowsPerSecond: number;
  startupSeconds: number | undefined;
  checkpoints: number | undefined;
}

const server = await startPostgres({ maxPreparedTransactions: 20 });
/** The machine's 1-minute load average, sampled after every case: a shared machine's figures are read against it. */
const loads: number[] = [];

/** The plain loop: `writers` connections, writer w takes the records whose key is w modulo writers (no two writers touch one key). */
async function plainLoop(mode: Mode, writers: number): Promise<Result> {
  const columns = 3;
  const textOf = (rows: number) => {
    const tuples = Array.from({ length: rows }, (_, i) => `($${i * columns + 1}, $${i * columns + 2}, $${i * columns + 3})`).join(', ');
    return mode === 'append'
      ? `INSERT INTO bench_rows (seq, key, amount) VALUES ${tuples}`
      : `INSERT INTO bench_totals (seq, key, amount) VALUES ${tuples} ON CONFLICT (key) DO UPDATE SET seq = EXCLUDED.seq, amount = EXCLUDED.amount`;
  };
  const text = textOf(BATCH);
  const clients = await Promise.all(
    Array.from({ length: writers }, async () => {
      const client = new pg.Client({ connectionString: server.connectionString });
      await client.connect();
      return client;
    }),
  );
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, writer) => {
      let values: unknown[] = [];
      const flush = async () => {
        if (values.length === 0) return;
        const rows = values.length / columns;
        await client.query(rows === BATCH ? { name: 'bench_insert', text, values } : { text: textOf(rows), values });
        values = [];
      };
      for (let seq = 0; seq < records; seq++) {
        if ((seq % KEYS) % writers !== writer) continue;
        const row = benchRow(seq, KEYS);
        values.push(row.seq, row.key, row.amount);
        if (values.length === BATCH * columns) await flush();
      }
      await flush();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(clients.map((client) => client.end()));
  return { rowsPerSecond: records / seconds, startupSeconds: undefined, checkpoints: undefined };
}

async function weir(entry: Case, parallelism: number): Promise<Result> {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bench-pg-'));
  Object.assign(process.env, {
    BPG_URL: server.connectionString,
    BPG_COUNT: String(records),
    BPG_KEYS: String(KEYS),
    BPG_MODE: entry.mode,
    BPG_GUARANTEE: entry.guarantee,
    BPG_BATCH: String(BATCH),
  });
  let checkpoints = 0;
  try {
    const started = performance.now();
    const client = await startJob({
      job,
      config: { parallelism, workers: parallelism, checkpointing: { interval: '1s', storage: join(folder, 'checkpoints') } },
      log: () => {},
      onEvent: (event) => {
        if (event.type === 'checkpoint-completed') checkpoints++;
      },
    });
    while (client.status().state === 'starting') await new Promise((resolve) => setTimeout(resolve, 2));
    const running = performance.now();
    const result = await client.result;
    const ended = performance.now();
    if (client.status().state !== 'finished') throw new Error(`${entry.name}: the job ended ${client.status().state}: ${JSON.stringify(result)}`);
    return { rowsPerSecond: records / ((ended - running) / 1000), startupSeconds: (running - started) / 1000, checkpoints };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The table read back: every record once (append), every key once at its last record (upsert), nothing prepared. */
async function audit(entry: Case): Promise<void> {
  if (entry.mode === 'discard') return;
  const prepared = await server.query('SELECT gid FROM pg_prepared_xacts');
  if (prepared.length > 0) throw new Error(`${entry.name}: prepared transactions left: ${JSON.stringify(prepared)}`);
  if (entry.mode === 'append') {
    const [row] = await server.query<{ rows: string; seqs: string }>('SELECT count(*) AS rows, count(DISTINCT seq) AS seqs FROM bench_rows');
    if (Number(row?.rows) !== records || Number(row?.seqs) !== records)
      throw new Error(`${entry.name}: bench_rows holds ${row?.rows} rows, ${row?.seqs} distinct, not ${records}`);
  } else {
    const lastSeqs = Math.min(records, KEYS);
    const [row] = await server.query<{ rows: string; wrong: string }>(
      `SELECT count(*) AS rows, count(*) FILTER (WHERE seq <> (${records - 1} - ((${records - 1} - substr(key, 5)::bigint) % ${KEYS}))) AS wrong FROM bench_totals`,
    );
    if (Number(row?.rows) !== lastSeqs || Number(row?.wrong) !== 0)
      throw new Error(`${entry.name}: bench_totals holds ${row?.rows} keys (not ${lastSeqs}), ${row?.wrong} not at their last record`);
  }
}

const cases: Case[] = [
  { name: 'plain `pg` loop, append (the limit)', mode: 'append' },
  { name: 'plain `pg` loop, upsert (the limit)', mode: 'upsert' },
  { name: 'Weir, discarding sink (no database: the engine alone)', mode: 'discard', guarantee: 'exactly-once' },
  { name: 'Weir exactly-once, append', mode: 'append', guarantee: 'exactly-once' },
  { name: 'Weir exactly-once, upsert', mode: 'upsert', guarantee: 'exactly-once' },
  { name: 'Weir at-least-once, upsert', mode: 'upsert', guarantee: 'at-least-once' },
];

/** The best of `rounds` runs per case; the rounds go through every case in turn, so a burst of load elsewhere on the machine hits one round of each. */
const best = new Map<string, Result>();
const id = (parallelism: number, entry: Case) => `${parallelism} ${entry.name}`;
try {
  for (const statement of POSTGRES_BENCH_TABLES) await server.query(statement);
  for (let round = 1; round <= rounds; round++) {
    for (const parallelism of [1, 2]) {
      for (const entry of cases) {
        await server.query('TRUNCATE bench_rows, bench_totals');
        await server.query('VACUUM ANALYZE bench_rows, bench_totals');
        const result = entry.guarantee === undefined ? await plainLoop(entry.mode, parallelism) : await weir(entry, parallelism);
        await audit(entry);
        loads.push(loadavg()[0] as number);
        log(`round ${round}, parallelism ${parallelism}, ${entry.name}: ${fmt(result.rowsPerSecond)} rows/s`);
        const previous = best.get(id(parallelism, entry));
        if (previous === undefined || result.rowsPerSecond > previous.rowsPerSecond) best.set(id(parallelism, entry), result);
      }
    }
  }
} finally {
  await server.stop();
}

const rows: string[][] = [];
for (const parallelism of [1, 2]) {
  for (const entry of cases) {
    const result = best.get(id(parallelism, entry)) as Result;
    const limitCase = cases.find((other) => other.guarantee === undefined && other.mode === (entry.mode === 'discard' ? 'append' : entry.mode)) as Case;
    const limit = (best.get(id(parallelism, limitCase)) as Result).rowsPerSecond;
    rows.push([
      String(parallelism),
      entry.name,
      fmt(result.rowsPerSecond),
      entry.guarantee === undefined ? '1.00' : fmt(result.rowsPerSecond / limit, 2),
      result.startupSeconds === undefined ? '-' : fmt(result.startupSeconds, 1),
      result.checkpoints === undefined ? '-' : String(result.checkpoints),
    ]);
  }
}

const lines = [
  '# PostgreSQL sink: exactly-once and at-least-once against a plain batched `pg` loop',
  '',
  `\`npm run bench:postgres${process.argv[2] === undefined ? '' : ` -- ${process.argv.slice(2).join(' ')}`}\`, ${new Date().toISOString().slice(0, 10)}, this machine (2 cores, the server on the same cores), no Kafka; the machine's 1-minute load average after the cases: ${fmt(Math.min(...loads), 1)} to ${fmt(Math.max(...loads), 1)} (2 means both cores busy).`,
  '',
  `${fmt(records)} records per case, ${fmt(KEYS)} distinct keys, 3 columns (seq bigint, key text, amount int), ${BATCH} rows per INSERT everywhere. One PostgreSQL for the whole run, started by test/harness/postgres-server.ts (initdb, max_prepared_transactions 20, fsync and synchronous_commit off: the tests' server, so the figures are the client side's and the server's CPU, not a disk's). The table is emptied between cases. Each case ran ${rounds} time${rounds === 1 ? '' : 's'} (the rounds one after the other over every case): the best run is shown.`,
  '',
  "- **plain `pg` loop** (the limit): `parallelism` writers in the bench's one thread, one connection each, each writing its share (the keys that are its index modulo the writers) in multi-row INSERTs of a named prepared statement, autocommit, each awaited before the next; upsert: `ON CONFLICT (key) DO UPDATE`.",
  '- **Weir**: generator -> keyBy(key) -> postgresSink, `parallelism` subtasks on as many worker threads, checkpoints every second; exactly-once: one transaction per subtask per checkpoint, `PREPARE TRANSACTION` at the barrier, `COMMIT PREPARED` when the checkpoint completes; at-least-once: the same transaction, `COMMIT` at the barrier. rows/s from the job running to its end (the last commit included); start-up (preflight, worker threads, connections) apart.',
  '- Every case is read back: append holds each record once, upsert each key once at its last record, nothing stays prepared.',
  '',
  ...markdownTable(['parallelism', 'case', 'rows/s', 'vs plain loop', 'start-up s', 'checkpoints'], rows),
  '',
  "How each writes: the plain loop awaits every statement before it sends the next. Weir sends a batch's statements at once and awaits them before the next batch (one batch in flight, the task going on meanwhile); the exactly-once sink also holds the rows that arrive while the previous checkpoint's transaction waits for its COMMIT PREPARED (they would wait on its row locks) and then sends them all at once. The discarding sink is the same job without a database: the engine's own rate on this machine (generator, keyBy exchange, sink task).",
  '',
  '"vs plain loop": against the plain loop of the same mode (append or upsert; the discarding sink against append) at the same parallelism.',
  '',
];
const text = lines.join('\n');
await writeFile(join(import.meta.dirname, 'results', 'postgres.md'), text);
process.stdout.write(`${text}\n`);
