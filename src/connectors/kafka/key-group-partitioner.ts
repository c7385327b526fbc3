import { WeirError } from '../../core/errors/weir-error.ts';
import type { KeyLike } from '../../core/state/state-key.ts';
import { compositeKeySelector } from '../../state/composite-key.ts';
import { assignToKeyGroup, UPPER_BOUND_MAX_PARALLELISM } from '../../state/key-group-range-assignment.ts';

const stateKeyOf = compositeKeySelector((key: KeyLike) => key);

/**
 * The key group of `key` among `maxParallelism` key groups, as a keyBy on it assigns it (Flink's
 * KeyGroupRangeAssignment.assignToKeyGroup: murmur3 of the key). A topic whose partition p holds
 * key group p (`partition: keyGroupOf(key, partitions)`) can be read without an exchange by a job
 * of that maxParallelism, with DataStreamUtils.reinterpretAsKeyedStream.
 */
export function keyGroupOf(key: KeyLike, maxParallelism: number): number {
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > UPPER_BOUND_MAX_PARALLELISM) {
    throw new WeirError('INVALID_CONFIG', `keyGroupOf: maxParallelism must be a whole number from 1 to ${UPPER_BOUND_MAX_PARALLELISM}, not ${maxParallelism}`, {
      hint: "pass the reading job's maxParallelism (the topic's partition count)",
    });
  }
  return assignToKeyGroup(stateKeyOf(key), maxParallelism);
}

/**
 * A kafkaSink partitioner that writes key group p to partition p: the record's Kafka key, read as
 * UTF-8 text, must be the string the reading job keys by (`keyBy((r) => r.account)` and
 * `key: r.account`). For other keys give the serializer `partition: keyGroupOf(key, partitions)`.
 */
export function keyGroupPartitioner(key: Buffer | null, partitions: number): number {
  if (key === null) {
    throw new WeirError('INVALID_CONFIG', 'keyGroupPartitioner: a record without a Kafka key has no key group', {
      hint: 'give every record a key in the sink serializer ({ key: record.account, value })',
      fault: 'user',
    });
  }
  return keyGroupOf(key.toString('utf8'), partitions);
}
