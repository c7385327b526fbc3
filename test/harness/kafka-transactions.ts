/** What tests ask the broker and a checkpoint storage about an exactly-once Kafka sink's transactions. */

import { CompletedCheckpointStore } from '../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { openCheckpointStorage } from '../../src/checkpoint/storage/open-checkpoint-storage.ts';
import { ClusterConnections } from '../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { type KafkaCommittable, type TransactionDescription, TransactionDriver } from '../../src/connectors/kafka/transaction-driver.ts';
import { StreamTaskStateInitializer } from '../../src/runtime/tasks/stream-task-state-initializer.ts';

/** The transactional ids of this prefix with an open (Ongoing) transaction. */
export async function openTransactionIds(brokers: readonly BrokerAddress[], prefix: string): Promise<string[]> {
  const connections = new ClusterConnections(brokers);
  try {
    return await new TransactionDriver(connections, { transactionTimeoutMs: 60_000 }).listOpenTransactions(prefix);
  } finally {
    await connections.close();
  }
}

/** DescribeTransactions of these ids. */
export async function describeTransactions(brokers: readonly BrokerAddress[], ids: readonly string[]): Promise<TransactionDescription[]> {
  const connections = new ClusterConnections(brokers);
  try {
    return await new TransactionDriver(connections, { transactionTimeoutMs: 60_000 }).describeTransactions(ids);
  } finally {
    await connections.close();
  }
}

/** The committables the latest completed checkpoint of this storage holds for the sink with this uid (its pre-committed transactions). */
export async function checkpointHeldCommittables(storageFolder: string, sinkUid: string): Promise<{ checkpointId: number; committables: KafkaCommittable[] }> {
  const storage = openCheckpointStorage(storageFolder);
  const latest = await new CompletedCheckpointStore(storage).latest();
  if (latest === undefined) throw new Error(`no completed checkpoint in ${storageFolder}`);
  const operator = latest.operators.find((entry) => entry.uid === sinkUid);
  if (operator === undefined) return { checkpointId: latest.checkpointId, committables: [] };
  const state = new StreamTaskStateInitializer({
    maxParallelism: latest.maxParallelism,
    parallelism: operator.parallelism,
    subtaskIndex: 0,
    storage,
    restore: {
      checkpointId: latest.checkpointId,
      folder: latest.location.path,
      maxParallelism: latest.maxParallelism,
      operators: latest.operators.map((entry) => ({ uid: entry.uid, parallelism: entry.parallelism, subtasks: entry.subtasks })),
      transactionsCommitted: false,
    },
  });
  const backend = await state.operatorStateBackend(sinkUid);
  const entries = backend.getUnionListState<{ committable: KafkaCommittable }>('pending-committables').get();
  return { checkpointId: latest.checkpointId, committables: entries.map((entry) => entry.committable) };
}
