/** Audits the output of test/fixtures/jobs/keyed-sum-job.ts: what a reader of committed files sees. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditRecords } from '../../src/audit/audit-records.ts';
import type { SumRecord } from '../fixtures/jobs/keyed-sum-job.ts';

export interface KeyedSumAudit {
  records: number;
  duplicates: number;
  missing: number;
  /** Records whose seq was never an input. */
  unexpected: number;
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

/** `keys`: how many keys the job's generator cycled through (KS_KEYS, default 50). */
export function auditKeyedSum(folder: string, count: number, keys = 50): KeyedSumAudit {
  const expectedTotal = new Map<string, number>();
  for (let seq = 0; seq < count; seq++) {
    const key = `key-${seq % keys}`;
    expectedTotal.set(key, (expectedTotal.get(key) ?? 0) + ((seq % 10) + 1) * 2);
  }
  const audit = auditRecords(readCommittedRecords(folder), {
    idOf: (record) => record.seq,
    expected: { kind: 'sequence', count },
    running: { keyOf: (record) => record.key, valueOf: (record) => record.sum, deltaOf: (record) => record.amount, expectedFinal: expectedTotal },
  });
  return {
    records: audit.records,
    duplicates: audit.duplicates.copies,
    missing: audit.missing.ids,
    unexpected: audit.unexpected.records,
    wrongSums: audit.wrongKeys.map(({ key, last, expected }) => `${key}: last sum ${last}, expected ${expected ?? 'no output'}`),
  };
}
