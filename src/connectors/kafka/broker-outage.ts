import type { Logger } from '../../core/logging/logger.ts';
import { formatDuration } from '../../core/time/duration.ts';

/** How often a continuing outage is logged again. */
export const OUTAGE_REPORT_INTERVAL_MS = 5_000;

/**
 * Says when a connector's brokers become unreachable (at the first failed attempt, so within
 * seconds), keeps saying what it waits for every few seconds while it retries, and says when they
 * answer again. One per ClusterConnections; every retry loop over those connections reports here.
 */
export class BrokerOutage {
  readonly #owner: string;
  readonly #logger: () => Logger;
  #since: number | undefined;
  #lastReport = 0;

  /** `owner` names who retries, e.g. `the kafka sink "output"`; `logger` is asked for on first use. */
  constructor(owner: string, logger: () => Logger) {
    this.#owner = owner;
    this.#logger = logger;
  }

  /** A connection or request to `broker` failed with a network error; retries go on until `giveUpAt`. */
  failed(broker: string, reason: string, giveUpAt: number, now = Date.now()): void {
    if (this.#since !== undefined && now - this.#lastReport < OUTAGE_REPORT_INTERVAL_MS) return;
    const giveUp = formatDuration(Math.max(0, giveUpAt - now));
    if (this.#since === undefined) {
      this.#since = now;
      this.#logger().warn(`Kafka broker ${broker} unreachable (${reason}): ${this.#owner} is retrying, giving up in ${giveUp}`, { broker, reason });
    } else {
      this.#logger().warn(
        `Kafka broker ${broker} still unreachable after ${formatDuration(now - this.#since)} (${reason}): ${this.#owner} waits for it, giving up in ${giveUp}`,
        {
          broker,
          reason,
        },
      );
    }
    this.#lastReport = now;
  }

  /** A request went through: if brokers were unreachable, say they are back. */
  recovered(now = Date.now()): void {
    if (this.#since === undefined) return;
    this.#logger().info(`Kafka reachable again after ${formatDuration(now - this.#since)}: ${this.#owner} goes on`);
    this.#since = undefined;
  }

  get unreachableSince(): number | undefined {
    return this.#since;
  }
}
