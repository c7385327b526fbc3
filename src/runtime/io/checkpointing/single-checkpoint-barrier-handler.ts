import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import { type BarrierHandlerState, WaitingForFirstBarrier } from './barrier-handler-state.ts';
import type { BarrierHandlerController, CheckpointBarrierHandler } from './checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from './checkpoint-options.ts';

/**
 * Aligned barriers, for exactly-once (Flink's SingleCheckpointBarrierHandler): a channel that
 * delivered barrier N is blocked until every channel has; then the task snapshots and the channels
 * resume. Channels deliver barriers in order, so N completes before N + 1 starts, unless a channel
 * never delivers N: then the first barrier of a newer checkpoint aborts N on this task, which
 * declines it (CHECKPOINT_DECLINED_SUBSUMED: it does not count as a failure) and says so, and the
 * new alignment starts. Barriers of a checkpoint this task already took or gave up are ignored,
 * as are those of one that went unaligned ({@link switchedToUnaligned}).
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

  /** The newest checkpoint this task has seen a barrier of (taken, given up, aligning or gone unaligned). */
  get currentCheckpointId(): number {
    return this.#currentCheckpointId;
  }

  async processBarrier(channel: number, location: CheckpointLocation, controller: BarrierHandlerController, options?: CheckpointOptions): Promise<void> {
    const id = location.checkpointId;
    if (id < this.#currentCheckpointId) return; // a barrier of a checkpoint given up before
    if (id === this.#currentCheckpointId && this.#state.checkpointId !== id) return; // a barrier of one taken or given up already
    if (id > this.#currentCheckpointId) this.abortAlignment(id, controller);
    this.#currentCheckpointId = id;
    this.#state = await this.#state.barrierReceived(controller, channel, location, options);
  }

  /** A barrier of checkpoint `newerId` makes the alignment in progress (of an older one) moot: it is declined. */
  abortAlignment(newerId: number, controller: BarrierHandlerController): void {
    const older = this.#state.checkpointId;
    if (older === undefined || older >= newerId) return;
    controller.resumeAllChannels();
    this.#state = new WaitingForFirstBarrier(this.#channels);
    controller.abortCheckpoint(older, {
      reason: 'CHECKPOINT_DECLINED_SUBSUMED',
      message: `the barrier of checkpoint ${newerId} arrived while checkpoint ${older} was aligning`,
    });
  }

  /**
   * Checkpoint `checkpointId` went unaligned on this task: its alignment (if it had started) ends,
   * every channel resumes, and its barriers still to come are ignored here.
   */
  switchedToUnaligned(checkpointId: number, controller: BarrierHandlerController): void {
    if (this.#state.checkpointId !== undefined) controller.resumeAllChannels();
    this.#state = new WaitingForFirstBarrier(this.#channels);
    if (checkpointId > this.#currentCheckpointId) this.#currentCheckpointId = checkpointId;
  }
}
