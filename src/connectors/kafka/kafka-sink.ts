import type { Preflightable, PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import type { Sink } from '../../core/connector/sink.ts';
import type { TaskTransaction } from '../../core/connector/task-transaction.ts';
import type { StreamOperator } from '../../core/operator/stream-operator.ts';
import { finishTransactionsAtJobEnd, TwoPhaseCommitSinkOperator } from '../two-phase-commit-sink.ts';
import { AtLeastOnceKafkaWriter } from './at-least-once-kafka-writer.ts';
import { ExactlyOnceKafkaWriter } from './exactly-once-kafka-writer.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { brokerTransactionMaxTimeout, missingTopics, transactionTimeoutFindings, unreachableFinding } from './kafka-preflight.ts';
import { type KafkaSinkOptions, parseKafkaSinkOptions } from './kafka-sink-options.ts';
import { prefixInUseFinding, prefixProbeWindow } from './prefix-in-use.ts';
import { TaskKafkaWriter } from './task-kafka-writer.ts';
import { defaultTransactionalIdPrefix } from './transactional-id.ts';

/**
 * Kafka sink (Flink's KafkaSink). In exactly-once mode, a two-phase-commit sink
 * (exactly-once-kafka-writer.ts): one Kafka transaction per subtask per checkpoint, pre-committed
 * on the barrier (every AddPartitionsToTxn and Produce acknowledged), its committable
 * {transactionalId, producerId, epoch, protocol} in the checkpoint, committed when the checkpoint
 * completes, re-committed on restore. At-least-once writes are acknowledged before each barrier
 * passes; `none` sends and does not wait (at-least-once-kafka-writer.ts).
 */
export function kafkaSink<T>(options: KafkaSinkOptions<T>): Sink<T> & Preflightable {
  return kafkaSinkWithDeadLetters(options, []);
}

/** The Kafka sink that also writes the dead letters of these topics (its second input) in its transactions. */
function kafkaSinkWithDeadLetters<T>(options: KafkaSinkOptions<T>, deadLetterTopics: readonly string[]): Sink<T> & Preflightable {
  // Validated once, here: a bad option fails when the job is built, naming the setting and the fix.
  const { transactionTimeout: transactionTimeoutMs, recoveryBudget: recoveryBudgetMs, retryTimeout: retryTimeoutMs } = parseKafkaSinkOptions(options);
  return {
    name: `kafka sink${options.topic === undefined ? '' : ` (${options.topic})`}`,
    deliveryGuarantee: options.deliveryGuarantee,
    async preflight(context: PreflightContext): Promise<PreflightFinding[]> {
      const where = `kafka sink "${context.uid}"`;
      try {
        const { bootstrap, connection } = resolveKafkaConnection(options, 'kafkaSink');
        const findings: PreflightFinding[] = [];
        const topics = [...(options.topic === undefined ? [] : [options.topic]), ...deadLetterTopics];
        const missing = topics.length === 0 ? [] : await missingTopics(bootstrap, topics, connection);
        for (const topic of missing) {
          const deadLetters = topic !== options.topic;
          findings.push({
            level: 'error',
            where,
            message: `${where}: its ${deadLetters ? 'dead-letter ' : ''}topic "${topic}" does not exist${deadLetters ? ' on its cluster (dead letters join the transactions of the sink, on its cluster)' : ''}`,
            hint: deadLetters
              ? 'create the topic there, or give the deadLetter policy a bootstrap of its own (then it has a sink of its own)'
              : 'create the topic first (Weir does not create topics)',
          });
        }
        if (options.deliveryGuarantee === 'exactly-once') {
          const brokerMax = await brokerTransactionMaxTimeout(bootstrap, connection);
          findings.push(...transactionTimeoutFindings(where, transactionTimeoutMs, recoveryBudgetMs, brokerMax, context));
          const prefix = options.transactionalIdPrefix ?? defaultTransactionalIdPrefix(context.jobName, context.uid);
          const inUse = await prefixInUseFinding(
            where,
            prefix,
            bootstrap,
            connection,
            prefixProbeWindow(context.config.checkpointing?.interval),
            context.predecessorGone,
          );
          if (inUse !== undefined) findings.push(inUse);
        } else if (context.config.checkpointing !== undefined) {
          findings.push({
            level: 'warning',
            where,
            message: `${where} is ${options.deliveryGuarantee}: after a failure its output can hold duplicates${options.deliveryGuarantee === 'none' ? ' or miss records' : ''}`,
            hint: "use deliveryGuarantee: 'exactly-once' (and read the output with isolation.level=read_committed)",
          });
        }
        return findings;
      } catch (error) {
        return [unreachableFinding(where, error)];
      }
    },
    exclusiveClaims: (context) =>
      options.deliveryGuarantee === 'exactly-once'
        ? [
            {
              what: 'transactional id prefix',
              name: options.transactionalIdPrefix ?? defaultTransactionalIdPrefix(context.jobName, context.uid),
              setting: 'transactionalIdPrefix',
            },
          ]
        : [],
    createOperator: () =>
      (options.deliveryGuarantee === 'exactly-once'
        ? new TwoPhaseCommitSinkOperator(new ExactlyOnceKafkaWriter(options, transactionTimeoutMs, retryTimeoutMs))
        : new AtLeastOnceKafkaWriter(options, retryTimeoutMs)) as unknown as StreamOperator<T, never>,
    // Cluster mode: the records go into the task's transaction (exactly-once by the task's checkpoint).
    ...(options.deliveryGuarantee === 'exactly-once'
      ? {
          createTaskOperator: (transaction: TaskTransaction) =>
            new TaskKafkaWriter(options, transaction, retryTimeoutMs) as unknown as StreamOperator<T, never>,
        }
      : {}),
    ...(options.deliveryGuarantee === 'exactly-once'
      ? { withDeadLetters: (topics: readonly string[]) => kafkaSinkWithDeadLetters(options, [...new Set([...deadLetterTopics, ...topics])]) }
      : {}),
    // At the job's end: commit what the latest completed checkpoint holds, abort every other open transaction.
    onJobEnd: async (subtasks) => {
      if (options.deliveryGuarantee !== 'exactly-once') return;
      await finishTransactionsAtJobEnd(
        () => new TwoPhaseCommitSinkOperator(new ExactlyOnceKafkaWriter(options, transactionTimeoutMs, retryTimeoutMs)),
        subtasks,
      );
    },
  };
}
