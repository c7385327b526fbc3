import { setTimeout as sleep } from 'node:timers/promises';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { BrokerOutage } from './broker-outage.ts';
import { describeNetworkError } from './cluster-connections.ts';
import { formatBootstrap } from './kafka-connection-options.ts';
import { kafkaErrorIds, kafkaServerMessages, RETRIABLE_TRANSACTION_ERRORS } from './kafka-error-ids.ts';

/** The connections a request runs over, as far as retrying needs them: their brokers and their outage report. */
export interface RetryReporting {
  readonly bootstrap: Parameters<typeof formatBootstrap>[0];
  readonly outage: BrokerOutage;
}

/**
 * Runs a request, retrying with backoff (50 ms doubling up to 1 s; 10 ms for CONCURRENT_TRANSACTIONS) on retriable Kafka errors and
 * on network errors (a broker restarting), until `retryTimeoutMs` has passed; `beforeRetry` forgets
 * what may have moved (coordinators, leaders). The last error is thrown as KAFKA_REQUEST_FAILED
 * naming `what` and the Kafka error ids, unless it already is a WeirError. Network errors are
 * reported to `connections.outage` (a warning within seconds, repeated while it lasts).
 */
export async function retryKafkaRequest<T>(
  what: string,
  request: () => Promise<T>,
  retryTimeoutMs: number,
  beforeRetry: () => void,
  connections?: RetryReporting,
): Promise<T> {
  const deadline = Date.now() + retryTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await request();
      connections?.outage.recovered();
      return result;
    } catch (error) {
      const ids = kafkaErrorIds(error);
      const retriable = ids.length === 0 ? isNetworkError(error) : ids.every((id) => RETRIABLE_TRANSACTION_ERRORS.includes(id));
      if (!retriable || Date.now() > deadline) {
        if (error instanceof WeirError) throw error;
        const said = kafkaServerMessages(error);
        throw Object.assign(
          new WeirError(
            'KAFKA_REQUEST_FAILED',
            `${what} failed${ids.length > 0 ? ` with ${ids.join(', ')}` : ''}: ${error instanceof Error ? error.message : String(error)}${said.length > 0 ? ` (the broker: ${said.join('; ')})` : ''}`,
            {
              fault: 'external',
              retriable,
              cause: error,
            },
          ),
          { apiId: ids[0] },
        );
      }
      if (ids.length === 0 && connections !== undefined)
        connections.outage.failed(formatBootstrap(connections.bootstrap), describeNetworkError(error), deadline);
      beforeRetry();
      // CONCURRENT_TRANSACTIONS: the coordinator is ending the id's previous transaction (a crashed
      // run's, aborted by InitProducerId), which takes it milliseconds: a restart's sinks ask again sooner.
      const base = ids.length > 0 && ids.every((id) => id === 'CONCURRENT_TRANSACTIONS') ? 10 : 50;
      await sleep(Math.min(1000, base * 2 ** Math.min(attempt, 6)));
    }
  }
}

/** Whether an error without a Kafka error id is a network failure worth retrying (a broker restarting, a connection reset). */
export function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return (
    code === 'PLT_KFK_NETWORK' ||
    code === 'PLT_KFK_TIMEOUT' ||
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'BROKER_UNREACHABLE' ||
    code === 'EPIPE' ||
    code === 'ETIMEDOUT' ||
    code === 'UNKNOWN_BROKER'
  );
}
