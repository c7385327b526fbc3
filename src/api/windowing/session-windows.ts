import { WeirError } from '../../core/errors/weir-error.ts';
import { timeSetting } from '../../core/time/time-setting.ts';
import type { Trigger } from '../../core/windowing/trigger.ts';
import { TimeWindow } from '../../core/windowing/window.ts';
import type { WindowAssigner, WindowAssignerContext } from '../../core/windowing/window-assigner.ts';
import { EventTimeTrigger } from './event-time-trigger.ts';
import { ProcessingTimeTrigger } from './processing-time-trigger.ts';

/** The gap of a record (dynamic gaps): milliseconds, above 0. */
export type SessionGapExtractor<T> = (element: T) => number;

function gapOf<T>(name: string, extractor: SessionGapExtractor<T>, element: T): number {
  const gap = extractor(element);
  if (typeof gap !== 'number' || !Number.isFinite(gap) || gap <= 0) {
    throw new WeirError('INVALID_WINDOW', `${name}.withDynamicGap: the gap extractor returned ${gap} for a record`, {
      hint: 'return a session gap above 0 milliseconds for every record',
    });
  }
  return gap;
}

function staticGap(name: string, gap: number | string): number {
  return timeSetting(gap, `${name}.withGap(gap)`, { positive: true, fix: `give the inactivity that ends a session, e.g. ${name}.withGap('30m')` });
}

/**
 * Sessions of event time (Flink's EventTimeSessionWindows): a key's records closer together than
 * the gap fall into one window, which closes after `gap` without records. Windows merge as records
 * arrive, so window functions of aggregate() need `merge`.
 */
export class EventTimeSessionWindows<T = unknown> implements WindowAssigner<T, TimeWindow> {
  readonly #gap: SessionGapExtractor<T>;
  readonly isEventTime = true;
  readonly isMerging = true;
  readonly #description: string;

  private constructor(gap: SessionGapExtractor<T>, description: string) {
    this.#gap = gap;
    this.#description = description;
  }

  static withGap(gap: number | string): EventTimeSessionWindows {
    const ms = staticGap('EventTimeSessionWindows', gap);
    return new EventTimeSessionWindows(() => ms, `EventTimeSessionWindows(${ms})`);
  }

  /** A gap per record. */
  static withDynamicGap<T>(extractor: SessionGapExtractor<T>): EventTimeSessionWindows<T> {
    return new EventTimeSessionWindows<T>((element) => gapOf('EventTimeSessionWindows', extractor, element), 'EventTimeSessionWindows(dynamic)');
  }

  assignWindows(element: T, timestamp: number): TimeWindow[] {
    return [new TimeWindow(timestamp, timestamp + this.#gap(element))];
  }

  defaultTrigger(): Trigger<T, TimeWindow> {
    return EventTimeTrigger.create();
  }

  toString(): string {
    return this.#description;
  }
}

/** Sessions of processing time (Flink's ProcessingTimeSessionWindows). */
export class ProcessingTimeSessionWindows<T = unknown> implements WindowAssigner<T, TimeWindow> {
  readonly #gap: SessionGapExtractor<T>;
  readonly isEventTime = false;
  readonly isMerging = true;
  readonly #description: string;

  private constructor(gap: SessionGapExtractor<T>, description: string) {
    this.#gap = gap;
    this.#description = description;
  }

  static withGap(gap: number | string): ProcessingTimeSessionWindows {
    const ms = staticGap('ProcessingTimeSessionWindows', gap);
    return new ProcessingTimeSessionWindows(() => ms, `ProcessingTimeSessionWindows(${ms})`);
  }

  static withDynamicGap<T>(extractor: SessionGapExtractor<T>): ProcessingTimeSessionWindows<T> {
    return new ProcessingTimeSessionWindows<T>((element) => gapOf('ProcessingTimeSessionWindows', extractor, element), 'ProcessingTimeSessionWindows(dynamic)');
  }

  assignWindows(element: T, _timestamp: number, context: WindowAssignerContext): TimeWindow[] {
    const now = context.currentProcessingTime();
    return [new TimeWindow(now, now + this.#gap(element))];
  }

  defaultTrigger(): Trigger<T, TimeWindow> {
    return ProcessingTimeTrigger.create();
  }

  toString(): string {
    return this.#description;
  }
}
