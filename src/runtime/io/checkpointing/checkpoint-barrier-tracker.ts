import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import type { BarrierHandlerController, CheckpointBarrierHandler } from './checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from './checkpoint-options.ts';

/**
 * Barriers without alignment, for at-least-once (Flink's CheckpointBarrierTracker): nothing is
 * blocked, so channels may be at different checkpoints; each checkpoint counts its own barriers and
 * is taken when all have arrived, which makes every older one still counting moot (they are
 * dropped, as in Flink). Barriers of checkpoints at or below the last one taken are ignored.
 */
export class CheckpointBarrierTracker implements CheckpointBarrierHandler {
  readonly #channels: number;
  readonly #counting = new Map<number, { received: Set<number> }>();
  #latestTaken = 0;

  constructor(channels: number) {
    this.#channels = channels;
  }

  /** The checkpoints still counting barriers, ascending. */
  get pending(): number[] {
    return [...this.#counting.keys()].sort((a, b) => a - b);
  }

  async processBarrier(channel: number, location: CheckpointLocation, controller: BarrierHandlerController, options?: CheckpointOptions): Promise<void> {
    const id = location.checkpointId;
    if (id <= this.#latestTaken) return;
    let counting = this.#counting.get(id);
    if (counting === undefined) {
      counting = { received: new Set() };
      this.#counting.set(id, counting);
    }
    counting.received.add(channel);
    if (counting.received.size < this.#channels) return;
    for (const older of this.#counting.keys()) if (older <= id) this.#counting.delete(older);
    this.#latestTaken = id;
    await controller.triggerCheckpoint(location, 0, options);
  }
}
