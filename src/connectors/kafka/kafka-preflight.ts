import type { ConnectionOptions } from '@platformatic/kafka';
import { maxRestartDelay } from '../../core/config/max-restart-delay.ts';
import type { PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { formatDuration } from '../../core/time/duration.ts';
import { ClusterConnections } from './cluster-connections.ts';
import type { BrokerAddress } from './kafka-connection-options.ts';
import { ConfigResourceTypes, describeConfigsV4 } from './kafka-protocol.ts';

/** Kafka's default transaction.max.timeout.ms. */
export const KAFKA_DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 15 * 60 * 1000;

const ms = (value: number) => `${formatDuration(value)} = ${value} ms`;

/**
 * The smallest transaction.max.timeout.ms among the brokers (what a transaction may ask for):
 * DescribeConfigs of each broker, sent to that broker (a broker answers for its own config only).
 */
export async function brokerTransactionMaxTimeout(bootstrap: readonly BrokerAddress[], connection: ConnectionOptions | undefined): Promise<number> {
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-preflight', ...connection });
  try {
    const metadata = await connections.metadata([]);
    const values: number[] = [];
    for (const broker of metadata.brokers) {
      const response = await describeConfigsV4.api.async(
        await connections.node(broker.nodeId),
        [{ resourceType: ConfigResourceTypes.BROKER, resourceName: String(broker.nodeId), configurationKeys: ['transaction.max.timeout.ms'] }],
        false,
        false,
      );
      for (const result of response.results)
        for (const config of result.configs) if (config.name === 'transaction.max.timeout.ms' && config.value !== null) values.push(Number(config.value));
    }
    return values.length === 0 ? KAFKA_DEFAULT_TRANSACTION_MAX_TIMEOUT_MS : Math.min(...values);
  } finally {
    await connections.close().catch(() => {});
  }
}

/** Which of these topics do not exist. */
export async function missingTopics(
  bootstrap: readonly BrokerAddress[],
  topics: readonly string[],
  connection: ConnectionOptions | undefined,
): Promise<string[]> {
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-preflight', ...connection });
  const missing: string[] = [];
  try {
    for (const topic of topics) {
      try {
        await connections.topic(topic);
      } catch (error) {
        if (error instanceof WeirError && error.code === 'UNKNOWN_TOPIC') missing.push(topic);
        else throw error;
      }
    }
  } finally {
    await connections.close().catch(() => {});
  }
  return missing;
}

/**
 * The exactly-once Kafka sink's timeout checks: its transaction timeout must be within the
 * brokers' transaction.max.timeout.ms (or every InitProducerId is refused), and longer than a
 * transaction can stay open before its commit, or the broker aborts pre-committed transactions and
 * their records are lost. A transaction is open from the barrier before it to the completion of
 * the checkpoint after it; every tolerated checkpoint failure keeps it open one more round; a crash
 * adds a restart delay and the recovery (`recoveryBudget`: restart of the process, start-up).
 */
export function transactionTimeoutFindings(
  where: string,
  transactionTimeoutMs: number,
  recoveryBudgetMs: number,
  brokerMaxMs: number,
  context: PreflightContext,
): PreflightFinding[] {
  const findings: PreflightFinding[] = [];
  if (transactionTimeoutMs > brokerMaxMs) {
    findings.push({
      level: 'error',
      where,
      message: `${where}: transactionTimeout (${ms(transactionTimeoutMs)}) is above the brokers' transaction.max.timeout.ms (${ms(brokerMaxMs)}): the broker would refuse every transaction`,
      hint: `set the sink's transactionTimeout to at most ${formatDuration(brokerMaxMs)}, or raise transaction.max.timeout.ms on the brokers`,
    });
  }
  const checkpointing = context.config.checkpointing;
  if (checkpointing !== undefined) {
    const rounds = checkpointing.tolerableFailures + 1;
    const restartDelay = maxRestartDelay(context.config.restartStrategy);
    const needed = rounds * (checkpointing.interval + checkpointing.timeout) + restartDelay + recoveryBudgetMs;
    if (transactionTimeoutMs <= needed) {
      findings.push({
        level: 'error',
        where,
        message:
          `${where}: transactionTimeout (${ms(transactionTimeoutMs)}) is not longer than a transaction can stay open before its commit: ` +
          `(checkpointing.tolerableFailures ${checkpointing.tolerableFailures} + 1) x (checkpointing.interval ${formatDuration(checkpointing.interval)} + checkpointing.timeout ${formatDuration(checkpointing.timeout)}) ` +
          `+ the longest restart delay ${formatDuration(restartDelay)} + recoveryBudget ${formatDuration(recoveryBudgetMs)} = ${ms(needed)}; ` +
          'the broker would abort pre-committed transactions and their records would be lost',
        hint: `raise transactionTimeout above ${formatDuration(needed)} (within the brokers' transaction.max.timeout.ms, ${formatDuration(brokerMaxMs)}), or lower checkpointing.timeout, tolerableFailures or recoveryBudget`,
      });
    }
  }
  return findings;
}

/** A reachability failure as a finding, instead of an exception. */
export function unreachableFinding(where: string, error: unknown): PreflightFinding {
  return {
    level: 'error',
    where,
    message: `${where}: ${error instanceof Error ? error.message : String(error)}`,
    hint: error instanceof WeirError && error.hint !== undefined ? error.hint : 'check the bootstrap servers and that the brokers run',
  };
}
