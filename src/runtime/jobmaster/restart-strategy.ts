import type { RestartStrategyConfig } from '../../core/config/environment-config.ts';
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
