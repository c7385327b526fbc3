import type { Trigger } from './trigger.ts';
import type { Window } from './window.ts';

/** What an assigner may ask when it assigns a record. */
export interface WindowAssignerContext {
  currentProcessingTime(): number;
}

/**
 * Puts each record into windows (Flink's WindowAssigner): tumbling, sliding, session or global.
 * Event-time assigners use the record's timestamp; processing-time ones the clock.
 */
export interface WindowAssigner<T, W extends Window> {
  /** The windows of a record with this timestamp (its event time, or the current processing time). */
  assignWindows(element: T, timestamp: number, context: WindowAssignerContext): W[];
  /** The trigger a window stream uses unless `.trigger(...)` says otherwise. */
  defaultTrigger(): Trigger<T, W>;
  /** Whether it works on event time (needs watermarks) rather than processing time. */
  readonly isEventTime: boolean;
  /** Whether overlapping windows of one key merge into one (session windows). */
  readonly isMerging: boolean;
  toString(): string;
}
