import type { fetchV17, KafkaRecord, RecordsBatch } from '@platformatic/kafka';

type AbortedTransaction = fetchV17.FetchResponsePartitionAbortedTransaction;

/** Record batch attribute bits (Kafka's RecordBatch v2). */
export const BATCH_IS_TRANSACTIONAL = 0x10;
export const BATCH_IS_CONTROL = 0x20;
/** Control record types, in the key of a control record: version (int16), type (int16). */
export const CONTROL_ABORT = 0;
export const CONTROL_COMMIT = 1;

export interface CommittedBatch {
  batch: RecordsBatch;
  records: KafkaRecord[];
}

export interface FilterResult {
  /** The data batches a read_committed reader may see, in offset order. */
  batches: CommittedBatch[];
  /** The offset to fetch next: one past the last batch looked at, control and aborted batches included. */
  nextOffset: bigint;
}

/**
 * Drops what a read_committed reader must never see from one partition's fetch response: records
 * of aborted transactions and control batches (commit and abort markers). It follows Kafka's own
 * consumer: the aborted transactions the broker lists (producer id, first offset) are taken in
 * offset order; a producer becomes "aborting" once the batches reach the first offset of one of its
 * aborted transactions, its transactional batches are skipped from there on, and it stops aborting
 * at its ABORT marker.
 *
 * The broker lists an aborted transaction in every fetch whose range overlaps it, so the state needs
 * no carrying from one fetch response to the next. That also holds when the records are in one fetch
 * and the abort marker in a later one (where a filter that waits for the marker within one response
 * would let the records through).
 */
export function filterAbortedTransactions(
  batches: readonly RecordsBatch[],
  abortedTransactions: readonly AbortedTransaction[] | null,
  fetchOffset: bigint,
): FilterResult {
  const pending = [...(abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  let nextPending = 0;
  const aborting = new Set<bigint>();
  const visible: CommittedBatch[] = [];
  let nextOffset = fetchOffset;

  for (const batch of batches) {
    const lastOffset = batch.firstOffset + BigInt(batch.lastOffsetDelta);
    if (lastOffset < fetchOffset) continue; // a batch the broker returns whole though we asked from its middle
    nextOffset = lastOffset + 1n;
    while (nextPending < pending.length && (pending[nextPending] as AbortedTransaction).firstOffset <= lastOffset) {
      aborting.add((pending[nextPending] as AbortedTransaction).producerId);
      nextPending++;
    }
    if ((batch.attributes & BATCH_IS_CONTROL) !== 0) {
      if (controlType(batch) === CONTROL_ABORT) aborting.delete(batch.producerId);
      continue;
    }
    if ((batch.attributes & BATCH_IS_TRANSACTIONAL) !== 0 && aborting.has(batch.producerId)) continue;
    const records =
      batch.firstOffset >= fetchOffset ? batch.records : batch.records.filter((record) => batch.firstOffset + BigInt(record.offsetDelta) >= fetchOffset);
    if (records.length > 0) visible.push({ batch, records });
  }
  return { batches: visible, nextOffset };
}

function controlType(batch: RecordsBatch): number {
  const key = batch.records[0]?.key;
  return key && key.length >= 4 ? key.readInt16BE(2) : -1;
}
