import type { RestartStrategyConfig } from '../../core/config/environment-config.ts';

/** Decides whether a failed job restarts, and after how long (Flink's restart strategies). */
export class RestartStrategy {
  readonly #config: RestartStrategyConfig;
  readonly #failures: number[] = [];
  #attempts = 0;
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
        if (this.#backoff === 0 || now - this.#lastFailureAt > config.resetBackoffThreshold) this.#backoff = config.initialBackoff;
        else this.#backoff = Math.min(config.maxBackoff, this.#backoff * config.multiplier);
        this.#lastFailureAt = now;
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
      case 'exponential-delay':
        return config.attempts === undefined ? 'restartStrategy exponential-delay' : `restartStrategy exponential-delay allows ${config.attempts} restarts`;
      case 'failure-rate':
        return `restartStrategy failure-rate allows ${config.maxFailuresPerInterval} failures per ${config.failureRateInterval} ms`;
    }
  }
}
