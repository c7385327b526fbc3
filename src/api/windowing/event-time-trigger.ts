import type { OnMergeContext, Trigger, TriggerContext, TriggerResult } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

/**
 * Fires a window once the watermark passes its end (Flink's EventTimeTrigger): the default of the
 * event-time window assigners. A record for a window the watermark has already passed (a late
 * record within the allowed lateness) fires it again at once.
 */
export class EventTimeTrigger implements Trigger<unknown, Window> {
  static readonly #instance = new EventTimeTrigger();

  private constructor() {}

  static create(): EventTimeTrigger {
    return EventTimeTrigger.#instance;
  }

  onElement(_element: unknown, _timestamp: number, window: Window, context: TriggerContext): TriggerResult {
    if (window.maxTimestamp() <= context.currentWatermark()) return 'FIRE';
    context.registerEventTimeTimer(window.maxTimestamp());
    return 'CONTINUE';
  }

  onEventTime(time: number, window: Window): TriggerResult {
    return time === window.maxTimestamp() ? 'FIRE' : 'CONTINUE';
  }

  onProcessingTime(): TriggerResult {
    return 'CONTINUE';
  }

  canMerge(): boolean {
    return true;
  }

  onMerge(window: Window, context: OnMergeContext): void {
    // Only if the watermark has not passed the merged window yet; otherwise the cleanup fires it.
    if (window.maxTimestamp() > context.currentWatermark()) context.registerEventTimeTimer(window.maxTimestamp());
  }

  clear(window: Window, context: TriggerContext): void {
    context.deleteEventTimeTimer(window.maxTimestamp());
  }

  toString(): string {
    return 'EventTimeTrigger()';
  }
}
