import type { NumericMap } from './kafka-protocol.ts';

/**
 * The request versions this driver pins: classic transaction semantics (no epoch bump per EndTxn,
 * partitions added explicitly) on transaction.version 1 and 2 brokers alike. Recorded in every
 * committable, so a later Weir knows how to finish it.
 */
export const TRANSACTION_PROTOCOL = 'classic-endtxn4-addpartitions3-produce11';

/** What a checkpoint keeps of a pre-committed Kafka transaction: enough to commit it from another process. */
export interface KafkaCommittable {
  version: 1;
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
  protocol: typeof TRANSACTION_PROTOCOL;
}

/** A transaction being written: its producer id and epoch, and the partitions and sequences it has used. */
export interface OpenTransaction {
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
  partitions: Set<string>;
  sequences: NumericMap;
  records: number;
}

/** The committable of a transaction this process wrote: what the checkpoint keeps of it. */
export function committableOf(transaction: OpenTransaction): KafkaCommittable {
  return {
    version: 1,
    transactionalId: transaction.transactionalId,
    producerId: transaction.producerId,
    producerEpoch: transaction.producerEpoch,
    protocol: TRANSACTION_PROTOCOL,
  };
}
