/** Audits the tables of test/fixtures/jobs/postgres-keyed-sum-job.ts against the generator's input, by reading them back. */
import type { PostgresTestServer } from './postgres-server.ts';

export interface PostgresKeyedSumAudit {
  rows: number;
  /** Rows beyond the first of the same seq in sum_events. */
  duplicates: number;
  /** Seqs below `count` with no row. */
  missing: number;
  /** sum_events rows whose running sum is not the previous one of its key plus its amount. */
  wrongSums: number;
  /** sum_totals rows (keys) whose total is not the input's or whose last seq is not the key's last record, or keys without a row. */
  wrongTotals: string[];
}

/** Each key's total over the datagen records 0..count-1 (key-(seq % 50), amount (seq % 10) + 1). */
export function expectedTotals(count: number): Map<string, number> {
  const totals = new Map<string, number>();
  for (let seq = 0; seq < count; seq++) totals.set(`key-${seq % 50}`, (totals.get(`key-${seq % 50}`) ?? 0) + (seq % 10) + 1);
  return totals;
}

export async function auditPostgresKeyedSum(server: PostgresTestServer, count: number): Promise<PostgresKeyedSumAudit> {
  const [events] = await server.query<{ rows: string; distinct: string; missing: string }>(
    `SELECT count(*) AS rows, count(DISTINCT seq) AS distinct,
            (SELECT count(*) FROM generate_series(0, $1::bigint - 1) AS s WHERE NOT EXISTS (SELECT 1 FROM sum_events e WHERE e.seq = s)) AS missing
       FROM sum_events`,
    [count],
  );
  // Running sums, over the first row of each seq (duplicates are counted above): a key's records
  // reach its running sum in the order they arrive (two source subtasks interleave), so its sums,
  // in the order of their values, rise by each record's amount from 0.
  const [sums] = await server.query<{ wrong: string }>(
    `SELECT count(*) AS wrong FROM (
       SELECT sum, amount, lag(sum, 1, 0::bigint) OVER (PARTITION BY key ORDER BY sum) AS previous
         FROM (SELECT DISTINCT ON (seq) seq, key, amount, sum FROM sum_events ORDER BY seq) AS firsts) AS checked
      WHERE sum - previous <> amount`,
  );
  // The upsert's row of a key holds its last record: the one whose running sum is the total.
  const lastSeqs = new Map(
    (await server.query<{ key: string; seq: string }>('SELECT DISTINCT ON (key) key, seq FROM sum_events ORDER BY key, sum DESC')).map((row) => [
      row.key,
      Number(row.seq),
    ]),
  );
  const totals = await server.query<{ key: string; total: string; last_seq: string }>('SELECT key, total, last_seq FROM sum_totals');
  const expected = expectedTotals(count);
  const wrongTotals: string[] = [];
  const seen = new Set<string>();
  for (const row of totals) {
    seen.add(row.key);
    const want = expected.get(row.key);
    const lastSeq = lastSeqs.get(row.key);
    if (want === undefined || Number(row.total) !== want || Number(row.last_seq) !== lastSeq) {
      wrongTotals.push(`${row.key}: total ${row.total} at seq ${row.last_seq}, expected ${want ?? 'no row'} at seq ${lastSeq ?? 'none'}`);
    }
  }
  for (const key of expected.keys()) if (!seen.has(key)) wrongTotals.push(`${key}: no row`);
  return {
    rows: Number(events?.rows),
    duplicates: Number(events?.rows) - Number(events?.distinct),
    missing: Number(events?.missing),
    wrongSums: Number(sums?.wrong),
    wrongTotals,
  };
}
