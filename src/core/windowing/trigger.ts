import type { Window } from './window.ts';

/**
 * What a trigger decides (Flink's TriggerResult): FIRE evaluates the window function on the
 * window's contents, PURGE drops the contents, FIRE_AND_PURGE does both, CONTINUE neither.
 */
export type TriggerResult = 'CONTINUE' | 'FIRE' | 'PURGE' | 'FIRE_AND_PURGE';

/** Per-window state of a trigger (scoped to the current key and window). */
export interface WindowValueState<V> {
  value(): V | undefined;
  update(value: V): void;
  clear(): void;
}

/** What a trigger can do for the window it is called for (Flink's Trigger.TriggerContext). */
export interface TriggerContext {
  currentWatermark(): number;
  currentProcessingTime(): number;
  /** Timers here belong to the key and window: the trigger's onEventTime / onProcessingTime gets them. */
  registerEventTimeTimer(time: number): void;
  deleteEventTimeTimer(time: number): void;
  registerProcessingTimeTimer(time: number): void;
  deleteProcessingTimeTimer(time: number): void;
  /** State of this trigger for the current key and window; `name` is unique within the trigger. Values must be structured-cloneable. */
  getPartitionedState<V>(name: string): WindowValueState<V>;
}

/** When session windows merge, the trigger's state of the merged windows is combined into the new window. */
export interface OnMergeContext extends TriggerContext {
  mergePartitionedState<V>(name: string, merge: (a: V, b: V) => V): void;
}

/**
 * Decides when a window fires (Flink's Trigger). One trigger object serves every key and window:
 * keep what it needs in `getPartitionedState`, never in fields.
 */
export interface Trigger<T, W extends Window = Window> {
  onElement(element: T, timestamp: number, window: W, context: TriggerContext): TriggerResult;
  onEventTime(time: number, window: W, context: TriggerContext): TriggerResult;
  onProcessingTime(time: number, window: W, context: TriggerContext): TriggerResult;
  /** Whether it works with merging (session) windows; then onMerge is called when they merge. */
  canMerge?(): boolean;
  onMerge?(window: W, context: OnMergeContext): void;
  /** The window is gone: delete its timers and state. */
  clear(window: W, context: TriggerContext): void;
  toString(): string;
}

/** Whether a result fires the window. */
export function isFire(result: TriggerResult): boolean {
  return result === 'FIRE' || result === 'FIRE_AND_PURGE';
}

/** Whether a result purges the window's contents. */
export function isPurge(result: TriggerResult): boolean {
  return result === 'PURGE' || result === 'FIRE_AND_PURGE';
}
