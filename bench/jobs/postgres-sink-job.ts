/**
 * The PostgreSQL benchmark's job: generator -> keyBy(key) -> postgresSink, nothing else, so the
 * sink is what is measured. From the environment: BPG_URL (the connection string), BPG_COUNT
 * (records), BPG_KEYS (distinct keys), BPG_MODE (append | upsert | discard: a discarding sink, the
 * engine's own ceiling without a database), BPG_GUARANTEE (exactly-once |
 * at-least-once), BPG_BATCH (rows per INSERT). The stream is keyed by the upsert key upstream (as
 * docs/connectors.md asks), so each key's rows reach one subtask and two subtasks never wait on each
 * other's row locks; append is keyed the same way, so every case moves the same records.
 * Tables: see POSTGRES_BENCH_TABLES.
 */
import { defineJob } from '../../src/api/define-job.ts';
import { dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import { postgresSink } from '../../src/connectors/postgres/postgres-sink.ts';

export const POSTGRES_BENCH_TABLES = [
  'CREATE TABLE IF NOT EXISTS bench_rows (seq bigint NOT NULL, key text NOT NULL, amount int NOT NULL)',
  'CREATE TABLE IF NOT EXISTS bench_totals (key text PRIMARY KEY, seq bigint NOT NULL, amount int NOT NULL)',
];

export interface BenchRow {
  seq: number;
  key: string;
  amount: number;
}

/** Record `seq`, the same in the job and in the plain loop. */
export function benchRow(seq: number, keys: number): BenchRow {
  return { seq, key: `key-${seq % keys}`, amount: (seq % 10) + 1 };
}

const count = Number(process.env.BPG_COUNT ?? 100_000);
const keys = Number(process.env.BPG_KEYS ?? 50_000);
const mode = process.env.BPG_MODE === 'upsert' ? 'upsert' : 'append';
const discard = process.env.BPG_MODE === 'discard';
const batchSize = Number(process.env.BPG_BATCH ?? 500);

export default defineJob({
  name: 'bench-postgres',
  build(env) {
    const rows = env.fromSource(dataGenSource<BenchRow>({ count, generate: (seq) => benchRow(seq, keys) }), { uid: 'generator' }).keyBy((row) => row.key);
    if (discard) {
      rows.sinkTo(discardingSink(), { uid: 'rows' });
      return;
    }
    rows.sinkTo(
      postgresSink<BenchRow>({
        ...(process.env.BPG_URL === undefined ? {} : { connectionString: process.env.BPG_URL }),
        table: mode === 'upsert' ? 'bench_totals' : 'bench_rows',
        columns: ['seq', 'key', 'amount'],
        mode,
        ...(mode === 'upsert' ? { key: ['key'] } : {}),
        batchSize,
        deliveryGuarantee: process.env.BPG_GUARANTEE === 'at-least-once' ? 'at-least-once' : 'exactly-once',
        toRow: (row) => ({ seq: row.seq, key: row.key, amount: row.amount }),
      }),
      { uid: 'rows' },
    );
  },
});
