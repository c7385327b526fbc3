import type { RestartStrategyConfig } from '../../core/config/environment-config.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { formatDuration } from '../../core/time/duration.ts';

/** Decides whether a failed job restarts, and after how long (Flink's restart strategies). */
export class RestartStrategy {
  readonly #config: RestartStrategyConfig;
  readonly #failures: number[] = [];
  #attempts = 0;
  /** exponential-delay: restarts since the backoff was last reset (Flink's attempts before reset). */
  #attemptsInRow = 0;
  #backoff = 0;
  #lastFailureAt = 0;

  constructor(config: RestartStrategyConfig) {
    this.#config = config;
  }

  /** The delay before the next restart, or undefined when the job must fail for good. */
  onFailure(now = Date.now()): number | undefined {
    const config = this.#config;
    this.#attempts++;
    switch (config.type) {
      case 'none':
        return undefined;
      case 'fixed-delay':
        return this.#attempts <= config.attempts ? config.delay : undefined;
      case 'exponential-delay': {
        if (config.attempts !== undefined && this.#attempts > config.attempts) return undefined;
        // A failure long enough after the one before finds a healthy job: start again from the initial backoff.
        if (this.#backoff === 0 || now - this.#lastFailureAt >= config.resetBackoffThreshold) {
          this.#backoff = config.initialBackoff;
          this.#attemptsInRow = 0;
        } else this.#backoff = Math.min(config.maxBackoff, this.#backoff * config.multiplier);
        this.#lastFailureAt = now;
        if (++this.#attemptsInRow > config.attemptsBeforeResetBackoff) return undefined;
        const jitter = this.#backoff * config.jitter * (Math.random() * 2 - 1);
        return Math.max(0, Math.round(this.#backoff + jitter));
      }
      case 'failure-rate': {
        this.#failures.push(now);
        while ((this.#failures[0] as number) < now - config.failureRateInterval) this.#failures.shift();
        return this.#failures.length <= config.maxFailuresPerInterval ? config.delay : undefined;
      }
    }
  }

  describe(): string {
    const config = this.#config;
    switch (config.type) {
      case 'none':
        return 'restartStrategy none';
      case 'fixed-delay':
        return `restartStrategy fixed-delay allows ${config.attempts} restarts`;
      case 'exponential-delay': {
        const inRow = `${config.attemptsBeforeResetBackoff} restarts in a row (failures less than ${formatDuration(config.resetBackoffThreshold)} apart)`;
        return config.attempts === undefined
          ? `restartStrategy exponential-delay allows ${inRow}`
          : `restartStrategy exponential-delay allows ${inRow}, ${config.attempts} in all`;
      }
      case 'failure-rate':
        return `restartStrategy failure-rate allows ${config.maxFailuresPerInterval} failures per ${config.failureRateInterval} ms`;
    }
  }
}

/**
 * Failures a restart cannot cure, so the job fails at once: lost data (DATA_LOSS), an aborted
 * checkpoint's `_metadata` that could not be deleted (a restart would restore it), a record the
 * (synchronous, so deterministic) deserializer cannot read under the 'fail' policy, and an offset
 * the partition no longer holds under onOffsetOutOfRange 'fail'. Each restart would meet them again.
 */
const NEVER_RESTART: ReadonlySet<string> = new Set(['DATA_LOSS', 'DESERIALIZATION_FAILED', 'OFFSET_OUT_OF_RANGE', 'ABORTED_CHECKPOINT_NOT_DISCARDED']);

export function neverRestarts(error: unknown): boolean {
  return error instanceof WeirError && NEVER_RESTART.has(error.code);
}

/** The error a job ends with when its restart strategy allows no more restarts (a failure that never restarts stays as it is). */
export function failedForGood(jobName: string, strategy: RestartStrategy, error: unknown): unknown {
  if (!(error instanceof WeirError) || neverRestarts(error)) return error;
  return new WeirError(error.code, `job "${jobName}" failed (${strategy.describe()}, no restart left): ${error.message}`, {
    hint: error.hint,
    fault: error.fault,
    cause: error,
  });
}
