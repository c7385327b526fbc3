/** An aborted transaction a fetch response lists: its producer and first offset. */
export interface AbortedTransaction {
  producerId: bigint;
  firstOffset: bigint;
}

/** What the filter reads of a record batch (record-batch-reader.ts's FetchedBatch has it). */
export interface BatchInfo {
  firstOffset: bigint;
  lastOffsetDelta: number;
  attributes: number;
  producerId: bigint;
  /** A control batch's type (CONTROL_ABORT, CONTROL_COMMIT); -1 for a data batch. */
  controlType: number;
}

/** Record batch attribute bits (Kafka's RecordBatch v2). */
export const BATCH_IS_TRANSACTIONAL = 0x10;
export const BATCH_IS_CONTROL = 0x20;
/** Control record types, in the key of a control record: version (int16), type (int16). */
export const CONTROL_ABORT = 0;
export const CONTROL_COMMIT = 1;

export interface FilterResult<B extends BatchInfo> {
  /** The data batches a read_committed reader may see, in offset order (a batch that starts before the fetch offset too: its records before it are the decoder's to leave out). */
  batches: B[];
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
export function filterAbortedTransactions<B extends BatchInfo>(
  batches: readonly B[],
  abortedTransactions: readonly AbortedTransaction[] | null,
  fetchOffset: bigint,
): FilterResult<B> {
  const pending = [...(abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  let nextPending = 0;
  const aborting = new Set<bigint>();
  const visible: B[] = [];
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
      if (batch.controlType === CONTROL_ABORT) aborting.delete(batch.producerId);
      continue;
    }
    if ((batch.attributes & BATCH_IS_TRANSACTIONAL) !== 0 && aborting.has(batch.producerId)) continue;
    visible.push(batch);
  }
  return { batches: visible, nextOffset };
}
