import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import { formatKey } from './format-key.ts';
import { formatKeyGroupRange, type KeyGroupRange } from './key-group-range.ts';
import { UPPER_BOUND_MAX_PARALLELISM } from './key-group-range-assignment.ts';

/**
 * The checks both keyed backends (heap and disk) make, and their errors, in one place so the two
 * say the same thing.
 */

/** A backend's maxParallelism and key-group range, checked when it is made (both come from the job's parallelism settings). */
export function checkKeyedBackendOptions(maxParallelism: number, range: KeyGroupRange, operatorName: string): void {
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > UPPER_BOUND_MAX_PARALLELISM) {
    throw new WeirError(
      'INVALID_MAX_PARALLELISM',
      `operator "${operatorName}": maxParallelism (${maxParallelism}) must be between 1 and ${UPPER_BOUND_MAX_PARALLELISM}`,
      { fault: 'internal', hint: 'check parallelism settings with checkParallelism before building backends' },
    );
  }
  const empty = range.end < range.start;
  if (!Number.isInteger(range.start) || !Number.isInteger(range.end) || (!empty && (range.start < 0 || range.end >= maxParallelism))) {
    throw new WeirError(
      'INVALID_KEY_GROUP_RANGE',
      `operator "${operatorName}": key-group range ${range.start}-${range.end} is not inside [0, ${maxParallelism})`,
      { fault: 'internal', hint: 'compute key-group ranges with computeKeyGroupRangeForOperatorIndex' },
    );
  }
}

/**
 * A key of key group `keyGroup`, outside the backend's `range`, was made current: the user's
 * partitioning broke its contract (a stream reinterpreted as keyed), else records were routed to
 * the wrong subtask (an internal error).
 */
export function keyOutsideRangeError(operatorName: string, key: StateKey, keyGroup: number, range: KeyGroupRange, reinterpreted: boolean): WeirError {
  if (reinterpreted) {
    return new WeirError(
      'KEY_NOT_PARTITIONED',
      `operator "${operatorName}" reads a stream reinterpreted as keyed, but key ${formatKey(key)} (key group ${keyGroup}) arrived at the subtask of key groups ${formatKeyGroupRange(range)}: the input is not partitioned as keyBy would partition it`,
      {
        hint: 'reinterpretAsKeyedStream needs every record at the subtask that owns its key group: a stream after keyBy that kept its key and parallelism, or a Kafka topic of maxParallelism partitions written with partitioner: keyGroupPartitioner; otherwise use keyBy',
        fault: 'user',
      },
    );
  }
  return new WeirError(
    'KEY_GROUP_OUT_OF_RANGE',
    `operator "${operatorName}": key ${formatKey(key)} is in key group ${keyGroup}, outside this subtask's key groups ${formatKeyGroupRange(range)}`,
    { fault: 'internal', hint: 'records must be routed to subtasks by key group (computeOperatorIndexForKeyGroup)' },
  );
}

/** A time domain that is neither 'processing' nor 'event'. */
export function unknownTimeDomainError(operatorName: string, domain: unknown): WeirError {
  return new WeirError('INVALID_TIME_DOMAIN', `operator "${operatorName}": unknown time domain ${JSON.stringify(domain)}`, {
    hint: "use 'processing' or 'event'",
  });
}
