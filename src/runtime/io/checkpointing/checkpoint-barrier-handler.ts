import type { CheckpointFailure } from '../../../checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointOptions } from './checkpoint-options.ts';

/**
 * The channel state an unaligned checkpoint's snapshot waits for: the records in flight, once the
 * barrier has arrived on every channel (`bytes` undefined: none were), or `aborted` when the
 * checkpoint was given up on this task before (it declined, or it was aborted): then no ack.
 */
export type ChannelStateResult = { kind: 'complete'; uid: string; bytes: Uint8Array | undefined } | { kind: 'aborted' };

/** What a barrier handler may do with its task's inputs and checkpoints (Flink's BarrierHandlerState.Controller). */
export interface BarrierHandlerController {
  /** Holds back the channel's messages until {@link resumeAllChannels}. */
  blockChannel(channel: number): void;
  resumeAllChannels(): void;
  /**
   * Snapshot the task's state and forward the barrier (with its `options`): every barrier of the
   * checkpoint is in, or (unaligned) the first one is and `channelState` resolves to the records
   * the barriers overtook, which the acknowledgement then includes.
   */
  triggerCheckpoint(location: CheckpointLocation, alignmentMs: number, options?: CheckpointOptions, channelState?: Promise<ChannelStateResult>): Promise<void>;
  /** Gives up a checkpoint on this task (declined to the coordinator with the failure). */
  abortCheckpoint(checkpointId: number, failure: CheckpointFailure): void;
}

/**
 * Decides, barrier by barrier, when a task with input channels takes its part of a checkpoint
 * (Flink's CheckpointBarrierHandler): aligned for exactly-once ({@link SingleCheckpointBarrierHandler}),
 * or counting without blocking for at-least-once ({@link CheckpointBarrierTracker}). Unaligned
 * checkpoints are the {@link UnalignedBarrierHandler}'s, beside the aligned one.
 */
export interface CheckpointBarrierHandler {
  processBarrier(channel: number, location: CheckpointLocation, controller: BarrierHandlerController, options?: CheckpointOptions): Promise<void>;
}
