import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import type { BarrierHandlerController } from './checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from './checkpoint-options.ts';

/**
 * A state of the aligned barrier handler (Flink's BarrierHandlerState): each barrier moves it to
 * its next state. There are two: waiting for the first barrier of a checkpoint, and collecting
 * the barriers of one from every channel while the channels that delivered theirs are blocked.
 */
export interface BarrierHandlerState {
  readonly name: 'WaitingForFirstBarrier' | 'CollectingBarriers';
  /** The checkpoint being aligned, if any. */
  readonly checkpointId: number | undefined;
  barrierReceived(
    controller: BarrierHandlerController,
    channel: number,
    location: CheckpointLocation,
    options: CheckpointOptions | undefined,
  ): Promise<BarrierHandlerState>;
}

/** No alignment in progress: the next barrier starts one (or completes it at once with one channel). */
export class WaitingForFirstBarrier implements BarrierHandlerState {
  readonly name = 'WaitingForFirstBarrier';
  readonly checkpointId = undefined;
  readonly #channels: number;

  constructor(channels: number) {
    this.#channels = channels;
  }

  barrierReceived(
    controller: BarrierHandlerController,
    channel: number,
    location: CheckpointLocation,
    options: CheckpointOptions | undefined,
  ): Promise<BarrierHandlerState> {
    return new CollectingBarriers(this.#channels, location, Date.now()).barrierReceived(controller, channel, location, options);
  }
}

/** Barriers of one checkpoint are arriving: each channel that delivered one is blocked until all have. */
export class CollectingBarriers implements BarrierHandlerState {
  readonly name = 'CollectingBarriers';
  readonly location: CheckpointLocation;
  readonly startedAt: number;
  readonly #channels: number;
  readonly #received = new Set<number>();

  constructor(channels: number, location: CheckpointLocation, startedAt: number) {
    this.#channels = channels;
    this.location = location;
    this.startedAt = startedAt;
  }

  get checkpointId(): number {
    return this.location.checkpointId;
  }

  async barrierReceived(
    controller: BarrierHandlerController,
    channel: number,
    location: CheckpointLocation,
    options: CheckpointOptions | undefined,
  ): Promise<BarrierHandlerState> {
    this.#received.add(channel);
    if (this.#received.size < this.#channels) {
      controller.blockChannel(channel);
      return this;
    }
    await controller.triggerCheckpoint(location, Date.now() - this.startedAt, options);
    controller.resumeAllChannels();
    return new WaitingForFirstBarrier(this.#channels);
  }
}
