import { WeirError } from '../../core/errors/weir-error.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import type { OffsetOutOfRangePolicy } from './kafka-source-options.ts';

/** Kafka's OFFSET_OUT_OF_RANGE error code, in a Fetch response's partition. */
export const OFFSET_OUT_OF_RANGE = 1;

/** A partition's out-of-range offset and the range it holds now: [earliest, latest). */
export interface OutOfRange {
  topic: string;
  partition: number;
  offset: bigint;
  earliest: bigint;
  latest: bigint;
}

/**
 * The offset the source goes on from when `offset` is out of range, as the policy says: 'fail'
 * throws OFFSET_OUT_OF_RANGE naming the lost range and the setting; 'earliest' and 'latest' warn
 * loudly (naming the range skipped) and count the records skipped in `lost`.
 */
export function resolveOutOfRange(range: OutOfRange, policy: OffsetOutOfRangePolicy, lost: MetricCounter | undefined, warn: (line: string) => void): bigint {
  const { topic, partition, offset, earliest, latest } = range;
  const where = `kafka source: offset ${offset} of ${topic}/${partition} is out of range (the partition holds offsets ${earliest} to ${latest - 1n < earliest ? `${earliest} (empty)` : latest - 1n})`;
  const what =
    offset < earliest
      ? `records ${offset} to ${earliest - 1n} (${earliest - offset}) were deleted (retention or DeleteRecords) before the job read them`
      : `the offset is past the partition's end ${latest} (was the topic deleted and created again?)`;
  if (policy === 'fail') {
    throw new WeirError('OFFSET_OUT_OF_RANGE', `${where}: ${what}`, {
      hint: "to go on without them, set kafkaSource's onOffsetOutOfRange to 'earliest' (read on from the oldest record kept) or 'latest' (only new records); the records lost are counted in recordsLostOutOfRange",
      fault: 'external',
    });
  }
  const next = policy === 'earliest' ? earliest : latest;
  const skipped = next > offset ? next - offset : 0n;
  lost?.inc(Number(skipped));
  warn(`${where}: ${what}; onOffsetOutOfRange is '${policy}': going on from offset ${next}, ${skipped} records skipped (recordsLostOutOfRange)`);
  return next;
}
