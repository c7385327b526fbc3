/** Keyed state in key groups, the heap backend, operator state and timers. */

export { HeapKeyedStateBackend, type HeapKeyedStateBackendOptions, type KeyedState } from './heap-keyed-state-backend.ts';
export type { TimeDomain } from './internal-timer-service.ts';
export {
  EMPTY_KEY_GROUP_RANGE,
  formatKeyGroupRange,
  type KeyGroupRange,
  keyGroupRange,
  keyGroupRangeContains,
  keyGroupRangeIntersection,
  keyGroupRangeSize,
} from './key-group-range.ts';
export {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  checkParallelism,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  DEFAULT_MAX_PARALLELISM,
  keyHash,
  type StateKey,
  UPPER_BOUND_MAX_PARALLELISM,
  validateStateKey,
} from './key-group-range-assignment.ts';
export { murmurHash3X86_32 } from './murmur-hash3.ts';
export { OperatorStateBackend } from './operator-state-backend.ts';
export type { OperatorStateDistributionMode } from './partitionable-list-state.ts';
export {
  type AggregateFunction,
  type AggregatingStateDescriptor,
  type AnyStateDescriptor,
  aggregatingState,
  type ListStateDescriptor,
  listState,
  type MapStateDescriptor,
  mapState,
  type ReducingStateDescriptor,
  reducingState,
  type StateDescriptor,
  type ValueStateDescriptor,
  valueState,
} from './state-descriptors.ts';
export { KEYED_STATE_FORMAT_VERSION, OPERATOR_STATE_FORMAT_VERSION } from './state-snapshot-format.ts';
export type { AggregatingState, ListState, MapState, ReducingState, StateKind, ValueState } from './state-types.ts';
