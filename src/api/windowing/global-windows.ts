import type { Trigger, TriggerResult } from '../../core/windowing/trigger.ts';
import { GlobalWindow } from '../../core/windowing/window.ts';
import type { WindowAssigner } from '../../core/windowing/window-assigner.ts';

/** Never fires (Flink's GlobalWindows.NeverTrigger): the default of global windows, which need a trigger of their own. */
class NeverTrigger implements Trigger<unknown, GlobalWindow> {
  onElement(): TriggerResult {
    return 'CONTINUE';
  }
  onEventTime(): TriggerResult {
    return 'CONTINUE';
  }
  onProcessingTime(): TriggerResult {
    return 'CONTINUE';
  }
  clear(): void {}
  toString(): string {
    return 'NeverTrigger()';
  }
}

/** One window per key holding every record (Flink's GlobalWindows): give it a trigger, such as CountTrigger. */
export class GlobalWindows implements WindowAssigner<unknown, GlobalWindow> {
  static readonly #instance = new GlobalWindows();
  readonly isEventTime = false;
  readonly isMerging = false;

  private constructor() {}

  static create(): GlobalWindows {
    return GlobalWindows.#instance;
  }

  assignWindows(): GlobalWindow[] {
    return [GlobalWindow.INSTANCE];
  }

  defaultTrigger(): Trigger<unknown, GlobalWindow> {
    return new NeverTrigger();
  }

  toString(): string {
    return 'GlobalWindows()';
  }
}
