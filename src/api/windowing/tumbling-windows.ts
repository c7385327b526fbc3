import { timeSetting } from '../../core/time/time-setting.ts';
import type { Trigger } from '../../core/windowing/trigger.ts';
import { TimeWindow, windowStartWithOffset } from '../../core/windowing/window.ts';
import type { WindowAssigner, WindowAssignerContext } from '../../core/windowing/window-assigner.ts';
import { EventTimeTrigger } from './event-time-trigger.ts';
import { ProcessingTimeTrigger } from './processing-time-trigger.ts';

function tumblingSettings(name: string, size: number | string, offset: number | string): { size: number; offset: number } {
  const sizeMs = timeSetting(size, `${name}.of(size)`, { positive: true, fix: `give the window length, e.g. ${name}.of('1m')` });
  const offsetMs = timeSetting(offset, `${name}.of(size, offset)`, {
    positive: false,
    fix: `give an offset of 0 or more (taken modulo the size), e.g. ${name}.of('1d', '2h') for days starting at 02:00`,
  });
  return { size: sizeMs, offset: offsetMs % sizeMs };
}

/**
 * Fixed-size, non-overlapping windows of event time (Flink's TumblingEventTimeWindows): with size
 * 1m, [00:00, 00:01), [00:01, 00:02), ... An offset shifts them: of('1d', '2h') starts days at 02:00.
 */
export class TumblingEventTimeWindows implements WindowAssigner<unknown, TimeWindow> {
  readonly size: number;
  readonly offset: number;
  readonly isEventTime = true;
  readonly isMerging = false;

  private constructor(size: number, offset: number) {
    this.size = size;
    this.offset = offset;
  }

  static of(size: number | string, offset: number | string = 0): TumblingEventTimeWindows {
    const settings = tumblingSettings('TumblingEventTimeWindows', size, offset);
    return new TumblingEventTimeWindows(settings.size, settings.offset);
  }

  assignWindows(_element: unknown, timestamp: number): TimeWindow[] {
    const start = windowStartWithOffset(timestamp, this.offset, this.size);
    return [new TimeWindow(start, start + this.size)];
  }

  defaultTrigger(): Trigger<unknown, TimeWindow> {
    return EventTimeTrigger.create();
  }

  toString(): string {
    return `TumblingEventTimeWindows(${this.size})`;
  }
}

/** Fixed-size, non-overlapping windows of processing time (Flink's TumblingProcessingTimeWindows). */
export class TumblingProcessingTimeWindows implements WindowAssigner<unknown, TimeWindow> {
  readonly size: number;
  readonly offset: number;
  readonly isEventTime = false;
  readonly isMerging = false;

  private constructor(size: number, offset: number) {
    this.size = size;
    this.offset = offset;
  }

  static of(size: number | string, offset: number | string = 0): TumblingProcessingTimeWindows {
    const settings = tumblingSettings('TumblingProcessingTimeWindows', size, offset);
    return new TumblingProcessingTimeWindows(settings.size, settings.offset);
  }

  assignWindows(_element: unknown, _timestamp: number, context: WindowAssignerContext): TimeWindow[] {
    const start = windowStartWithOffset(context.currentProcessingTime(), this.offset, this.size);
    return [new TimeWindow(start, start + this.size)];
  }

  defaultTrigger(): Trigger<unknown, TimeWindow> {
    return ProcessingTimeTrigger.create();
  }

  toString(): string {
    return `TumblingProcessingTimeWindows(${this.size})`;
  }
}
