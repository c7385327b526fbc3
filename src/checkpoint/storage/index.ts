export type { CheckpointLocation } from './checkpoint-location.ts';
export {
  CHECKPOINT_METADATA_VERSION,
  type CheckpointMetadata,
  checkpointMetadataSchema,
  METADATA_FILE_NAME,
  type OperatorStateMetadata,
  operatorStateMetadataSchema,
  parseCheckpointMetadata,
  type StateHandle,
  type SubtaskStateMetadata,
  stateHandleSchema,
  subtaskStateMetadataSchema,
} from './checkpoint-metadata.ts';
export { CheckpointStorage, type CheckpointSummary, type StoredCheckpointMetadata } from './checkpoint-storage.ts';
export { decodeOperatorUid, encodeOperatorUid, type StateKind, stateFileName } from './state-file-name.ts';
