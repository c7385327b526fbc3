import type { OpenTransaction, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';

/**
 * Whether the broker timed this producer's transaction out (rather than a newer owner fencing it).
 * When a transaction outlives its transaction.timeout.ms, the coordinator aborts it and bumps the
 * producer's epoch once, so the producer's next request is answered PRODUCER_FENCED (or
 * INVALID_PRODUCER_EPOCH), as if another owner had taken the transactional id. A new owner's
 * InitProducerId instead bumps the epoch at least twice (a fencing bump that aborts the open
 * transaction, then the bump of its own) or hands out another producer id, and leaves the id Empty
 * or Ongoing: the coordinator's state (DescribeTransactions) tells the two apart.
 */
export async function transactionTimedOut(
  driver: TransactionDriver,
  transaction: Pick<OpenTransaction, 'transactionalId' | 'producerId' | 'producerEpoch'>,
): Promise<boolean> {
  const [description] = await driver.describeTransactions([transaction.transactionalId]);
  if (description === undefined) return false;
  return (
    description.producerId === transaction.producerId &&
    description.producerEpoch === transaction.producerEpoch + 1 &&
    (description.state === 'PrepareAbort' || description.state === 'CompleteAbort')
  );
}
