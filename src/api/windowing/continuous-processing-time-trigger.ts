import { timeSetting } from '../../core/time/time-setting.ts';
import type { OnMergeContext, Trigger, TriggerContext, TriggerResult, WindowValueState } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

const FIRE_TIME = 'fire-time';

/** Fires a window every `interval` of processing time, and at its end (Flink's ContinuousProcessingTimeTrigger). */
export class ContinuousProcessingTimeTrigger implements Trigger<unknown, Window> {
  readonly #interval: number;

  private constructor(interval: number) {
    this.#interval = interval;
  }

  static of(interval: number | string): ContinuousProcessingTimeTrigger {
    return new ContinuousProcessingTimeTrigger(
      timeSetting(interval, 'ContinuousProcessingTimeTrigger.of(interval)', {
        positive: true,
        fix: "give how often the window fires, e.g. ContinuousProcessingTimeTrigger.of('10s')",
      }),
    );
  }

  onElement(_element: unknown, _timestamp: number, window: Window, context: TriggerContext): TriggerResult {
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    if (fireTime.value() === undefined) {
      const now = context.currentProcessingTime();
      this.#registerNext(now - (now % this.#interval), window, context, fireTime);
    }
    return 'CONTINUE';
  }

  onEventTime(): TriggerResult {
    return 'CONTINUE';
  }

  onProcessingTime(time: number, window: Window, context: TriggerContext): TriggerResult {
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    const next = fireTime.value();
    if (next !== undefined && time >= next) {
      fireTime.clear();
      if (next < window.maxTimestamp()) this.#registerNext(next, window, context, fireTime);
      return 'FIRE';
    }
    return 'CONTINUE';
  }

  canMerge(): boolean {
    return true;
  }

  onMerge(window: Window, context: OnMergeContext): void {
    context.mergePartitionedState<number>(FIRE_TIME, Math.min);
    const next = context.getPartitionedState<number>(FIRE_TIME).value();
    if (next !== undefined) context.registerProcessingTimeTimer(Math.min(next, window.maxTimestamp()));
  }

  clear(_window: Window, context: TriggerContext): void {
    const fireTime = context.getPartitionedState<number>(FIRE_TIME);
    const next = fireTime.value();
    if (next !== undefined) context.deleteProcessingTimeTimer(next);
    fireTime.clear();
  }

  #registerNext(time: number, window: Window, context: TriggerContext, fireTime: WindowValueState<number>): void {
    const next = Math.min(time + this.#interval, window.maxTimestamp());
    fireTime.update(next);
    context.registerProcessingTimeTimer(next);
  }

  toString(): string {
    return `ContinuousProcessingTimeTrigger(${this.#interval})`;
  }
}
