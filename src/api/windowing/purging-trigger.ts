import type { OnMergeContext, Trigger, TriggerContext, TriggerResult } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

function purging(result: TriggerResult): TriggerResult {
  return result === 'FIRE' ? 'FIRE_AND_PURGE' : result;
}

/** Makes every FIRE of another trigger a FIRE_AND_PURGE (Flink's PurgingTrigger): each firing starts the window afresh. */
export class PurgingTrigger<T, W extends Window> implements Trigger<T, W> {
  readonly #nested: Trigger<T, W>;

  private constructor(nested: Trigger<T, W>) {
    this.#nested = nested;
  }

  static of<T, W extends Window>(nested: Trigger<T, W>): PurgingTrigger<T, W> {
    return new PurgingTrigger(nested);
  }

  onElement(element: T, timestamp: number, window: W, context: TriggerContext): TriggerResult {
    return purging(this.#nested.onElement(element, timestamp, window, context));
  }

  onEventTime(time: number, window: W, context: TriggerContext): TriggerResult {
    return purging(this.#nested.onEventTime(time, window, context));
  }

  onProcessingTime(time: number, window: W, context: TriggerContext): TriggerResult {
    return purging(this.#nested.onProcessingTime(time, window, context));
  }

  canMerge(): boolean {
    return this.#nested.canMerge?.() ?? false;
  }

  onMerge(window: W, context: OnMergeContext): void {
    this.#nested.onMerge?.(window, context);
  }

  clear(window: W, context: TriggerContext): void {
    this.#nested.clear(window, context);
  }

  toString(): string {
    return `PurgingTrigger(${this.#nested})`;
  }
}
