/** Audits the running totals a cluster job's two-phase-commit sink committed (a file folder or a table), read back as a reader sees them. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Payment, Total } from '../fixtures/jobs/cluster-job.ts';

/** The committed part files of a file sink's folder, never its hidden work folders. */
export function committedFileTotals(folder: string): Total[] {
  return readdirSync(folder)
    .filter((name) => name.startsWith('part-'))
    .flatMap((name) =>
      readFileSync(join(folder, name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Total),
    );
}

/**
 * Every input once in the output (with `atLeastOnce`: at least once, each copy the same), each
 * running total right (per account, in input order).
 */
export function auditTotals(inputs: readonly Payment[], output: readonly Total[], options: { atLeastOnce?: boolean } = {}): void {
  const bySeq = new Map<number, Total>();
  let duplicates = 0;
  for (const record of output) {
    const earlier = bySeq.get(record.seq);
    if (earlier !== undefined) {
      duplicates++;
      assert.deepEqual(record, earlier, `seq ${record.seq}: every copy the same`);
    }
    bySeq.set(record.seq, record);
  }
  if (options.atLeastOnce === true) duplicates = 0;
  const missing = inputs.filter((payment) => !bySeq.has(payment.seq)).map((payment) => payment.seq);
  assert.deepEqual(
    { duplicates, missing: missing.length, firstMissing: missing.slice(0, 10) },
    { duplicates: 0, missing: 0, firstMissing: [] },
    'every input once in the output',
  );
  assert.equal(bySeq.size, inputs.length, 'no output of an input never written');
  const running = new Map<string, number>();
  for (const payment of inputs) {
    const next = (running.get(payment.account) ?? 0) + payment.amount;
    running.set(payment.account, next);
    assert.equal(bySeq.get(payment.seq)?.total, next, `the running total of ${payment.account} at seq ${payment.seq}`);
  }
}
