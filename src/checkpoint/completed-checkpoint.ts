import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import type { CheckpointMetadata } from './storage/checkpoint-metadata.ts';

/** A checkpoint or savepoint whose metadata is durable (Flink's CompletedCheckpoint): from this moment it exists. */
export interface CompletedCheckpoint {
  checkpointId: number;
  kind: 'checkpoint' | 'savepoint';
  location: CheckpointLocation;
  metadata: CheckpointMetadata;
}
