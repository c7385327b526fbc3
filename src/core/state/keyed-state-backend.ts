import type { TimeDomain } from '../time/time-domain.ts';
import type { StateDescriptor } from './state-descriptors.ts';
import type { StateKey } from './state-key.ts';

/**
 * What a keyed operator sees of its keyed state (Flink's KeyedStateBackend with its timer
 * service): state scoped to the current key, and timers per key, time domain and namespace (a
 * window, a join side; '' for a process function's own). The task builds the backend of each keyed
 * operator and snapshots and restores it by key group; an operator only uses this contract, so
 * another backend can take the heap one's place.
 */
export interface KeyedStateBackend {
  /** Makes `key` the current key: state and timers act on it until the next call. */
  setCurrentKey(key: StateKey): void;
  /** The current key, or undefined before the first {@link setCurrentKey}. */
  getCurrentKey(): StateKey | undefined;
  /** The keys that have a value in the state named `stateName` (Flink's getKeys); collect them before changing state. */
  keysOf(stateName: string): Iterable<StateKey>;
  /** The state object `descriptor` names; the same object on every call, acting on the current key. */
  getState<S>(descriptor: StateDescriptor<S>): S;
  /** Registers a timer of the current key; false when it was already there. */
  registerTimer(domain: TimeDomain, timestamp: number, namespace?: string): boolean;
  /** Deletes a timer of the current key; false when there was none. */
  deleteTimer(domain: TimeDomain, timestamp: number, namespace?: string): boolean;
  /** The earliest timer of this time domain, over every key; undefined when there is none. */
  nextTimerTimestamp(domain: TimeDomain): number | undefined;
  /**
   * Removes and hands to `onTimer`, in timestamp order, every timer of `domain` at or before `time`,
   * with its key set as the current key. Returns how many fired.
   */
  pollTimersUpTo(domain: TimeDomain, time: number, onTimer: (key: StateKey, timestamp: number, namespace: string) => void): number;
}
