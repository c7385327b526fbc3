import { timeSetting } from '../../core/time/time-setting.ts';
import type { OnMergeContext, Trigger, TriggerContext, TriggerResult, WindowValueState } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

const FIRE_TIME = 'fire-time';

/**
 * Fires a window every `interval` of event time, and once more at its end (Flink's
 * ContinuousEventTimeTrigger): early, updated results of a long window.
 */
export class ContinuousEventTimeTrigger implements Trigger<unknown, Window> {
  readonly #interval: number;

  private constructor(interval: number) {
    this.#interval = interval;
  }

  static of(interval: number | string): ContinuousEventTimeTrigger {
    return new ContinuousEventTimeTrigger(
      timeSetting(interval, 'ContinuousEventTimeTrigger.of(interval)', {
        positive: true,
        fix: "give how often the window fires early, e.g. ContinuousEventTimeTrigger.of('10s')",
      }),
    );
  }

  onElement(_element: unknown, timestamp: number, window: Window, context: TriggerContext): TriggerResult {
    if (window.maxTimestamp() <= context.currentWatermark()) return 'FIRE'; // the watermark is past the window: fire at once
    context.registerEventTimeTimer(window.maxTimestamp());
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    if (fireTime.value() === undefined)
      this.#registerNext(timestamp - (((timestamp % this.#interval) + this.#interval) % this.#interval), window, context, fireTime);
    return 'CONTINUE';
  }

  onEventTime(time: number, window: Window, context: TriggerContext): TriggerResult {
    if (time === window.maxTimestamp()) return 'FIRE';
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    if (fireTime.value() === time) {
      fireTime.clear();
      this.#registerNext(time, window, context, fireTime);
      return 'FIRE';
    }
    return 'CONTINUE';
  }

  onProcessingTime(): TriggerResult {
    return 'CONTINUE';
  }

  canMerge(): boolean {
    return true;
  }

  onMerge(window: Window, context: OnMergeContext): void {
    context.mergePartitionedState<number>(FIRE_TIME, Math.min);
    const next = context.getPartitionedState<number>(FIRE_TIME).value();
    if (next !== undefined) context.registerEventTimeTimer(next);
    if (window.maxTimestamp() > context.currentWatermark()) context.registerEventTimeTimer(window.maxTimestamp());
  }

  clear(window: Window, context: TriggerContext): void {
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    const next = fireTime.value();
    if (next !== undefined) context.deleteEventTimeTimer(next);
    fireTime.clear();
    context.deleteEventTimeTimer(window.maxTimestamp());
  }

  #registerNext(time: number, window: Window, context: TriggerContext, fireTime: WindowValueState<number>): void {
    const next = Math.min(time + this.#interval, window.maxTimestamp());
    fireTime.update(next);
    context.registerEventTimeTimer(next);
  }

  toString(): string {
    return `ContinuousEventTimeTrigger(${this.#interval})`;
  }
}
