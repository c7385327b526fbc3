import type { ListState } from './state-types.ts';

/**
 * Operator state of one subtask (Flink's OperatorStateStore): named lists that belong to the
 * subtask rather than to a key, as sources and sinks keep them (offsets, pending transactions).
 */
export interface OperatorStateStore {
  /** List state redistributed evenly when the parallelism changes (Flink's SPLIT_DISTRIBUTE). */
  getListState<T>(name: string): ListState<T>;
  /** List state every subtask gets in full on restore (Flink's UNION). */
  getUnionListState<T>(name: string): ListState<T>;
}
