import type { OnMergeContext, Trigger, TriggerContext, TriggerResult } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';

/** Fires a window when the clock passes its end (Flink's ProcessingTimeTrigger): the default of the processing-time assigners. */
export class ProcessingTimeTrigger implements Trigger<unknown, Window> {
  static readonly #instance = new ProcessingTimeTrigger();

  private constructor() {}

  static create(): ProcessingTimeTrigger {
    return ProcessingTimeTrigger.#instance;
  }

  onElement(_element: unknown, _timestamp: number, window: Window, context: TriggerContext): TriggerResult {
    context.registerProcessingTimeTimer(window.maxTimestamp());
    return 'CONTINUE';
  }

  onEventTime(): TriggerResult {
    return 'CONTINUE';
  }

  onProcessingTime(): TriggerResult {
    return 'FIRE';
  }

  canMerge(): boolean {
    return true;
  }

  onMerge(window: Window, context: OnMergeContext): void {
    if (window.maxTimestamp() > context.currentProcessingTime()) context.registerProcessingTimeTimer(window.maxTimestamp());
  }

  clear(window: Window, context: TriggerContext): void {
    context.deleteProcessingTimeTimer(window.maxTimestamp());
  }

  toString(): string {
    return 'ProcessingTimeTrigger()';
  }
}
