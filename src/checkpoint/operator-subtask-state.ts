import type { StateHandle } from './storage/checkpoint-metadata.ts';

/**
 * What one subtask acknowledges for one operator of its chain (Flink's OperatorSubtaskState): the
 * handles of the state files it wrote into the checkpoint, keyed and operator state.
 */
export interface OperatorSubtaskState {
  uid: string;
  keyed?: StateHandle;
  /** Incremental checkpoints: the keyed changes since `keyed`, oldest first. */
  keyedChanges?: StateHandle[];
  operator?: StateHandle;
}
