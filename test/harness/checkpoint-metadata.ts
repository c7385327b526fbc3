import type { CheckpointLocation } from '../../src/checkpoint/storage/checkpoint-location.ts';
import type { CheckpointMetadata } from '../../src/checkpoint/storage/checkpoint-metadata.ts';

/** The metadata a storage test completes a location with: that location's kind and id, these operators, a sink's committables. */
export function metadataFor(location: CheckpointLocation, operators: CheckpointMetadata['operators'] = []): CheckpointMetadata {
  return {
    version: 1,
    kind: location.kind,
    jobName: 'test-job',
    checkpointId: location.checkpointId,
    triggeredAt: 1_000,
    completedAt: 1_050,
    maxParallelism: 128,
    operators,
    properties: { sink: { pending: ['txn-1'] } },
  };
}
