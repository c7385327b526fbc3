/** A transaction as its coordinator describes it (DescribeTransactions). */
export interface TransactionDescription {
  transactionalId: string;
  /** Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Empty, Dead. */
  state: string;
  producerId: bigint;
  producerEpoch: number;
  /** When the open transaction began (ms since the epoch; -1 when none is open). */
  startTimeMs: number;
  timeoutMs: number;
  /** How many partitions the transaction has written to. */
  partitions: number;
}
