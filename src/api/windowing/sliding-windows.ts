import { WeirError } from '../../core/errors/weir-error.ts';
import { timeSetting } from '../../core/time/time-setting.ts';
import type { Trigger } from '../../core/windowing/trigger.ts';
import { TimeWindow, windowStartWithOffset } from '../../core/windowing/window.ts';
import type { WindowAssigner, WindowAssignerContext } from '../../core/windowing/window-assigner.ts';
import { EventTimeTrigger } from './event-time-trigger.ts';
import { ProcessingTimeTrigger } from './processing-time-trigger.ts';

interface SlidingSettings {
  size: number;
  slide: number;
  offset: number;
}

function slidingSettings(name: string, size: number | string, slide: number | string, offset: number | string): SlidingSettings {
  const sizeMs = timeSetting(size, `${name}.of(size, slide)`, { positive: true, fix: `give the window length, e.g. ${name}.of('10m', '1m')` });
  const slideMs = timeSetting(slide, `${name}.of(size, slide)`, {
    positive: true,
    fix: `give how far each window starts after the previous one, e.g. ${name}.of('10m', '1m')`,
  });
  if (slideMs > sizeMs) {
    throw new WeirError(
      'INVALID_WINDOW',
      `${name}.of(size, slide): the slide (${slideMs} ms) is larger than the size (${sizeMs} ms), so records between windows would be lost`,
      {
        hint: `make the slide at most the size (equal: tumbling windows, ${name.replace('Sliding', 'Tumbling')}.of(size))`,
      },
    );
  }
  const offsetMs = timeSetting(offset, `${name}.of(size, slide, offset)`, { positive: false, fix: 'give an offset from 0 up to the slide' });
  return { size: sizeMs, slide: slideMs, offset: offsetMs % slideMs };
}

function slidingWindows(timestamp: number, { size, slide, offset }: SlidingSettings): TimeWindow[] {
  const windows: TimeWindow[] = [];
  const lastStart = windowStartWithOffset(timestamp, offset, slide);
  for (let start = lastStart; start > timestamp - size; start -= slide) windows.push(new TimeWindow(start, start + size));
  return windows;
}

/**
 * Windows of `size` starting every `slide` of event time, so a record is in size / slide windows
 * (Flink's SlidingEventTimeWindows): of('10m', '1m') gives the last ten minutes, every minute.
 */
export class SlidingEventTimeWindows implements WindowAssigner<unknown, TimeWindow> {
  readonly #settings: SlidingSettings;
  readonly isEventTime = true;
  readonly isMerging = false;

  private constructor(settings: SlidingSettings) {
    this.#settings = settings;
  }

  static of(size: number | string, slide: number | string, offset: number | string = 0): SlidingEventTimeWindows {
    return new SlidingEventTimeWindows(slidingSettings('SlidingEventTimeWindows', size, slide, offset));
  }

  assignWindows(_element: unknown, timestamp: number): TimeWindow[] {
    return slidingWindows(timestamp, this.#settings);
  }

  defaultTrigger(): Trigger<unknown, TimeWindow> {
    return EventTimeTrigger.create();
  }

  toString(): string {
    return `SlidingEventTimeWindows(${this.#settings.size}, ${this.#settings.slide})`;
  }
}

/** Sliding windows of processing time (Flink's SlidingProcessingTimeWindows). */
export class SlidingProcessingTimeWindows implements WindowAssigner<unknown, TimeWindow> {
  readonly #settings: SlidingSettings;
  readonly isEventTime = false;
  readonly isMerging = false;

  private constructor(settings: SlidingSettings) {
    this.#settings = settings;
  }

  static of(size: number | string, slide: number | string, offset: number | string = 0): SlidingProcessingTimeWindows {
    return new SlidingProcessingTimeWindows(slidingSettings('SlidingProcessingTimeWindows', size, slide, offset));
  }

  assignWindows(_element: unknown, _timestamp: number, context: WindowAssignerContext): TimeWindow[] {
    return slidingWindows(context.currentProcessingTime(), this.#settings);
  }

  defaultTrigger(): Trigger<unknown, TimeWindow> {
    return ProcessingTimeTrigger.create();
  }

  toString(): string {
    return `SlidingProcessingTimeWindows(${this.#settings.size}, ${this.#settings.slide})`;
  }
}
