import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointingConfig } from '../../../core/config/environment-config.ts';

/**
 * How the barriers of one checkpoint may be handled, carried by the barrier from the source to
 * every task (Flink's CheckpointOptions with its alignment). A barrier without options is aligned:
 * savepoints, a stop's savepoint, at-least-once, jobs without `checkpointing.unaligned`, and the
 * barriers cluster mode delivers itself. With options the checkpoint starts aligned and goes
 * unaligned at a task once `alignedCheckpointTimeout` has passed since `triggeredAt` without every
 * barrier of it processed there (0: unaligned from its first barrier).
 */
export interface CheckpointOptions {
  /** When the source emitted the barrier (epoch ms): the aligned-checkpoint timeout counts from it. */
  triggeredAt: number;
  /** How long the checkpoint may stay aligned, in ms. */
  alignedCheckpointTimeout: number;
}

/** The options a source gives the barriers of a checkpoint at `location` (undefined: aligned). */
export function checkpointOptionsFor(config: CheckpointingConfig | undefined, location: CheckpointLocation, now: number): CheckpointOptions | undefined {
  if (config?.unaligned !== true || config.mode !== 'exactly-once' || location.kind !== 'checkpoint') return undefined;
  return { triggeredAt: now, alignedCheckpointTimeout: config.alignedCheckpointTimeout ?? 0 };
}
