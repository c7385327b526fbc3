import { WeirError } from '../../core/errors/weir-error.ts';
import type { OnMergeContext, Trigger, TriggerContext, TriggerResult } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

const COUNT = 'count';

/**
 * Fires a window every `maxCount` records (Flink's CountTrigger). It replaces the window's
 * default trigger, so time no longer fires the window: wrap it in PurgingTrigger to start each
 * count afresh, as `countWindow` does. The window is still cleaned up at its end.
 */
export class CountTrigger implements Trigger<unknown, Window> {
  readonly #maxCount: number;

  private constructor(maxCount: number) {
    this.#maxCount = maxCount;
  }

  static of(maxCount: number): CountTrigger {
    if (!Number.isInteger(maxCount) || maxCount < 1) {
      throw new WeirError('INVALID_TRIGGER', `CountTrigger.of(maxCount): maxCount must be a whole number of at least 1, got ${maxCount}`, {
        hint: 'give how many records fire the window, e.g. CountTrigger.of(100)',
      });
    }
    return new CountTrigger(maxCount);
  }

  onElement(_element: unknown, _timestamp: number, _window: Window, context: TriggerContext): TriggerResult {
    const count = context.getPartitionedState<number>(COUNT);
    const next = (count.value() ?? 0) + 1;
    if (next >= this.#maxCount) {
      count.clear();
      return 'FIRE';
    }
    count.update(next);
    return 'CONTINUE';
  }

  onEventTime(): TriggerResult {
    return 'CONTINUE';
  }

  onProcessingTime(): TriggerResult {
    return 'CONTINUE';
  }

  canMerge(): boolean {
    return true;
  }

  onMerge(_window: Window, context: OnMergeContext): void {
    context.mergePartitionedState<number>(COUNT, (a, b) => a + b);
  }

  clear(_window: Window, context: TriggerContext): void {
    context.getPartitionedState<number>(COUNT).clear();
  }

  toString(): string {
    return `CountTrigger(${this.#maxCount})`;
  }
}
