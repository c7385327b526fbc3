import { WeirError } from '../errors.ts';
import { HeapPriorityQueue, type HeapPriorityQueueElement } from './heap-priority-queue.ts';
import type { InternalKeyContext } from './internal-key-context.ts';
import type { StateKey } from './key-group-range-assignment.ts';

/** Flink's `TimeDomain`: timers fire on the wall clock or on the watermark. */
export type TimeDomain = 'processing' | 'event';

/** One timer in the queue (Flink's `TimerHeapInternalTimer`). */
export class TimerHeapInternalTimer implements HeapPriorityQueueElement {
  readonly key: StateKey;
  readonly timestamp: number;
  readonly keyGroupIndex: number;
  /** Registration order, so timers with one timestamp fire in the order they were registered. */
  readonly sequence: number;
  heapIndex = -1;

  constructor(key: StateKey, timestamp: number, keyGroupIndex: number, sequence: number) {
    this.key = key;
    this.timestamp = timestamp;
    this.keyGroupIndex = keyGroupIndex;
    this.sequence = sequence;
  }
}

function compareTimers(a: TimerHeapInternalTimer, b: TimerHeapInternalTimer): number {
  return a.timestamp - b.timestamp || a.sequence - b.sequence;
}

/**
 * The timers of one time domain of a keyed backend (Flink's `InternalTimerServiceImpl`): a binary
 * heap ordered by timestamp (then registration order) plus, per key group, a map key -> timestamp ->
 * timer that deduplicates registrations and finds a timer to delete. At most one timer exists per
 * key, timestamp and domain.
 */
export class InternalTimerService {
  readonly domain: TimeDomain;
  private readonly context: InternalKeyContext;
  private readonly queue = new HeapPriorityQueue<TimerHeapInternalTimer>(compareTimers);
  /** Indexed by key group minus the range start. */
  readonly groups: (Map<StateKey, Map<number, TimerHeapInternalTimer>> | undefined)[];
  private nextSequence = 0;
  private readonly description: string;

  constructor(domain: TimeDomain, context: InternalKeyContext, keyGroupCount: number) {
    this.domain = domain;
    this.context = context;
    this.groups = new Array(keyGroupCount).fill(undefined);
    this.description = `a ${domain}-time timer`;
  }

  get size(): number {
    return this.queue.size;
  }

  /** Registers a timer for the current key; returns false when it already existed. */
  register(timestamp: number): boolean {
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      throw new WeirError('INVALID_TIMER', `${this.description} of operator "${this.context.operatorName}" was registered for ${timestamp}`, {
        hint: 'register timers for a finite timestamp in milliseconds',
      });
    }
    const context = this.context;
    return this.add(context.currentKey as StateKey, timestamp, context.requireKeyGroupIndex(this.description));
  }

  /** Adds a timer for `key` in the key group at `keyGroupIndex`; returns false when it already existed. */
  add(key: StateKey, timestamp: number, keyGroupIndex: number): boolean {
    let group = this.groups[keyGroupIndex];
    if (group === undefined) {
      group = new Map();
      this.groups[keyGroupIndex] = group;
    }
    let timers = group.get(key);
    if (timers === undefined) {
      timers = new Map();
      group.set(key, timers);
    } else if (timers.has(timestamp)) {
      return false;
    }
    const timer = new TimerHeapInternalTimer(key, timestamp, keyGroupIndex, this.nextSequence++);
    timers.set(timestamp, timer);
    this.queue.add(timer);
    return true;
  }

  /** Deletes the current key's timer at `timestamp`; returns whether there was one. */
  delete(timestamp: number): boolean {
    const context = this.context;
    const index = context.requireKeyGroupIndex(this.description);
    const timers = this.groups[index]?.get(context.currentKey as StateKey);
    const timer = timers?.get(timestamp);
    if (timer === undefined) return false;
    this.forget(timer);
    this.queue.remove(timer);
    return true;
  }

  /** The earliest timestamp of any timer, or undefined. */
  nextTimestamp(): number | undefined {
    return this.queue.peek()?.timestamp;
  }

  /** Takes out the earliest timer if its timestamp is at most `time`. */
  pollUpTo(time: number): TimerHeapInternalTimer | undefined {
    const head = this.queue.peek();
    if (head === undefined || head.timestamp > time) return undefined;
    this.queue.poll();
    this.forget(head);
    return head;
  }

  /** Whether there are no timers. */
  isEmpty(): boolean {
    return this.queue.size === 0;
  }

  private forget(timer: TimerHeapInternalTimer): void {
    const group = this.groups[timer.keyGroupIndex]!;
    const timers = group.get(timer.key)!;
    timers.delete(timer.timestamp);
    if (timers.size === 0) group.delete(timer.key);
  }
}
