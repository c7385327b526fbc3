import type { MessageRecord } from '@platformatic/kafka';
import { type BatchProducer, RecordBatchBuilder } from '../../../../src/connectors/kafka/record-batch-builder.ts';

/**
 * One record batch of `records` (all of one partition), sealed with `firstSequence`. A record
 * without a timestamp gets `now`.
 */
export function encodeRecordBatch(records: readonly MessageRecord[], producer: BatchProducer, firstSequence: number, now: number): Buffer {
  const first = records[0];
  const builder = new RecordBatchBuilder(first?.topic ?? '', first?.partition ?? 0, 1024);
  for (const record of records) builder.append(record, now);
  return builder.seal(producer, firstSequence).bytes;
}
