import type { RestartStrategyConfig } from './environment-config.ts';

/** The longest single wait before a restart the strategy can make. */
export function maxRestartDelay(strategy: RestartStrategyConfig): number {
  switch (strategy.type) {
    case 'none':
      return 0;
    case 'fixed-delay':
    case 'failure-rate':
      return strategy.delay;
    case 'exponential-delay':
      return Math.round(strategy.maxBackoff * (1 + strategy.jitter));
  }
}
