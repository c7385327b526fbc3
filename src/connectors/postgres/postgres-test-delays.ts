import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Delays in the PostgreSQL sink for the crash tests, off unless
 * WEIR_TEST_POSTGRES_DELAY names them (as WEIR_TEST_STORAGE_DELAY does for the checkpoint storage):
 * `WEIR_TEST_POSTGRES_DELAY=<step>:<ms>[,...]` holds the sink for `ms` at each such step, so a
 * test can SIGKILL the job there. Steps:
 *
 * - `recovery-commit`: a `COMMIT PREPARED` of a transaction the restored checkpoint holds (one this
 *   run did not prepare itself);
 * - `recovery-rollback`: a `ROLLBACK PREPARED` of a lingering transaction;
 * - `carried-prepare`: the moment a carried transaction (its barrier overtook the previous
 *   checkpoint's completion) is about to get its rows and be prepared (held before, not after).
 */
export type PostgresTestDelayStep = 'recovery-commit' | 'recovery-rollback' | 'carried-prepare';

const delays = parse(process.env.WEIR_TEST_POSTGRES_DELAY);

/** Waits as WEIR_TEST_POSTGRES_DELAY asks at this step (at once when it asks nothing). */
export async function postgresTestDelay(step: PostgresTestDelayStep, what: string): Promise<void> {
  const ms = delays?.get(step);
  if (ms === undefined) return;
  process.stderr.write(`weir: WEIR_TEST_POSTGRES_DELAY: holding ${step === 'carried-prepare' ? 'before' : 'after'} ${what} for ${ms} ms\n`);
  await sleep(ms);
}

function parse(spec: string | undefined): Map<PostgresTestDelayStep, number> | undefined {
  if (spec === undefined || spec === '') return undefined;
  const parsed = new Map<PostgresTestDelayStep, number>();
  for (const part of spec.split(',')) {
    const match = /^(recovery-commit|recovery-rollback|carried-prepare):(\d+)$/.exec(part.trim());
    if (match === null) throw new Error(`WEIR_TEST_POSTGRES_DELAY: "${part}" is not <recovery-commit|recovery-rollback|carried-prepare>:<ms>`);
    parsed.set(match[1] as PostgresTestDelayStep, Number(match[2]));
  }
  return parsed;
}
