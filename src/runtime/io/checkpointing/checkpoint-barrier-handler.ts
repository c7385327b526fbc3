import type { CheckpointFailure } from '../../../checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';

/** What a barrier handler may do with its task's inputs and checkpoints (Flink's BarrierHandlerState.Controller). */
export interface BarrierHandlerController {
  /** Holds back the channel's messages until {@link resumeAllChannels}. */
  blockChannel(channel: number): void;
  resumeAllChannels(): void;
  /** Every barrier of the checkpoint is in: snapshot the task's state and forward the barrier. */
  triggerCheckpoint(location: CheckpointLocation, alignmentMs: number): Promise<void>;
  /** Gives up a checkpoint on this task (declined to the coordinator with the failure). */
  abortCheckpoint(checkpointId: number, failure: CheckpointFailure): void;
}

/**
 * Decides, barrier by barrier, when a task with input channels takes its part of a checkpoint
 * (Flink's CheckpointBarrierHandler): aligned for exactly-once ({@link SingleCheckpointBarrierHandler}),
 * or counting without blocking for at-least-once ({@link CheckpointBarrierTracker}).
 */
export interface CheckpointBarrierHandler {
  processBarrier(channel: number, location: CheckpointLocation, controller: BarrierHandlerController): Promise<void>;
}
