/** Audits the output of test/fixtures/jobs/keyed-sum-job.ts: what a reader of committed files sees. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SumRecord } from '../fixtures/jobs/keyed-sum-job.ts';

export interface KeyedSumAudit {
  records: number;
  duplicates: number;
  missing: number;
  /** Keys whose running sums are not an exact prefix-sum sequence ending at the expected total. */
  wrongSums: string[];
}

/** The committed files only: part files in the output folder itself, never the hidden work folders. */
export function readCommittedRecords(folder: string): SumRecord[] {
  return readdirSync(folder)
    .filter((name) => name.startsWith('part-'))
    .flatMap((name) =>
      readFileSync(join(folder, name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as SumRecord),
    );
}

export function auditKeyedSum(folder: string, count: number): KeyedSumAudit {
  const records = readCommittedRecords(folder);
  const seen = new Map<number, number>();
  for (const record of records) seen.set(record.seq, (seen.get(record.seq) ?? 0) + 1);
  let duplicates = 0;
  for (const times of seen.values()) if (times > 1) duplicates += times - 1;
  let missing = 0;
  for (let seq = 0; seq < count; seq++) if (!seen.has(seq)) missing++;

  const expectedTotal = new Map<string, number>();
  for (let seq = 0; seq < count; seq++) {
    const key = `key-${seq % 50}`;
    expectedTotal.set(key, (expectedTotal.get(key) ?? 0) + ((seq % 10) + 1) * 2);
  }
  const byKey = new Map<string, SumRecord[]>();
  for (const record of records) byKey.set(record.key, [...(byKey.get(record.key) ?? []), record]);
  const wrongSums: string[] = [];
  for (const [key, total] of expectedTotal) {
    const outputs = (byKey.get(key) ?? []).sort((a, b) => a.sum - b.sum);
    let previous = 0;
    let exact = true;
    for (const output of outputs) {
      if (output.sum - previous !== output.amount) exact = false;
      previous = output.sum;
    }
    if (!exact || previous !== total) wrongSums.push(`${key}: last sum ${previous}, expected ${total}`);
  }
  return { records: records.length, duplicates, missing, wrongSums };
}
