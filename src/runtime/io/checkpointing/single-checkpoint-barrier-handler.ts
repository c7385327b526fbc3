import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import { type BarrierHandlerState, WaitingForFirstBarrier } from './barrier-handler-state.ts';
import type { BarrierHandlerController, CheckpointBarrierHandler } from './checkpoint-barrier-handler.ts';

/**
 * Aligned barriers, for exactly-once (Flink's SingleCheckpointBarrierHandler): a channel that
 * delivered barrier N is blocked until every channel has; then the task snapshots and the channels
 * resume. Channels deliver barriers in order, so N completes before N + 1 starts, unless a channel
 * never delivers N: then the first barrier of a newer checkpoint aborts N on this task, which
 * declines it (CHECKPOINT_DECLINED_SUBSUMED: it does not count as a failure) and says so, and the
 * new alignment starts. Barriers of a checkpoint this task already took or gave up are ignored.
 */
export class SingleCheckpointBarrierHandler implements CheckpointBarrierHandler {
  readonly #channels: number;
  #state: BarrierHandlerState;
  /** The newest checkpoint this task has seen a barrier of. */
  #currentCheckpointId = 0;

  constructor(channels: number) {
    this.#channels = channels;
    this.#state = new WaitingForFirstBarrier(channels);
  }

  get state(): BarrierHandlerState {
    return this.#state;
  }

  async processBarrier(channel: number, location: CheckpointLocation, controller: BarrierHandlerController): Promise<void> {
    const id = location.checkpointId;
    if (id < this.#currentCheckpointId) return; // a barrier of a checkpoint given up before
    if (id === this.#currentCheckpointId && this.#state.checkpointId !== id) return; // a barrier of one taken or given up already
    if (id > this.#currentCheckpointId && this.#state.checkpointId !== undefined) {
      const older = this.#state.checkpointId;
      controller.resumeAllChannels();
      this.#state = new WaitingForFirstBarrier(this.#channels);
      controller.abortCheckpoint(older, {
        reason: 'CHECKPOINT_DECLINED_SUBSUMED',
        message: `the barrier of checkpoint ${id} arrived while checkpoint ${older} was aligning`,
      });
    }
    this.#currentCheckpointId = id;
    this.#state = await this.#state.barrierReceived(controller, channel, location);
  }
}
