import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import { CopyOnWriteGroups } from './copy-on-write-groups.ts';
import type { DirtyKeys } from './dirty-keys.ts';
import { HeapPriorityQueue, type HeapPriorityQueueElement } from './heap-priority-queue.ts';
import type { InternalKeyContext } from './internal-key-context.ts';

/** The namespace of timers that belong to no window (a process function's own timers). */
export const VOID_NAMESPACE = '';

/** One timer in the queue (Flink's `TimerHeapInternalTimer`). */
export class TimerHeapInternalTimer implements HeapPriorityQueueElement {
  readonly key: StateKey;
  readonly timestamp: number;
  /** What the timer is for, within its key: a window, a join buffer side; {@link VOID_NAMESPACE} for a process function's timers. */
  readonly namespace: string;
  readonly keyGroupIndex: number;
  /** Registration order, so timers with one timestamp fire in the order they were registered. */
  readonly sequence: number;
  heapIndex = -1;

  constructor(key: StateKey, timestamp: number, namespace: string, keyGroupIndex: number, sequence: number) {
    this.key = key;
    this.timestamp = timestamp;
    this.namespace = namespace;
    this.keyGroupIndex = keyGroupIndex;
    this.sequence = sequence;
  }
}

function compareTimers(a: TimerHeapInternalTimer, b: TimerHeapInternalTimer): number {
  return a.timestamp - b.timestamp || a.sequence - b.sequence;
}

/** A timer's identity within its key: the timestamp alone in the void namespace (no allocation), else timestamp and namespace. */
function timerId(timestamp: number, namespace: string): number | string {
  return namespace === VOID_NAMESPACE ? timestamp : `${timestamp}@${namespace}`;
}

/**
 * The timers of one time domain of a keyed backend (Flink's `InternalTimerServiceImpl`): a binary
 * heap ordered by timestamp (then registration order) plus, per key group, a map key -> timer id ->
 * timer that deduplicates registrations and finds a timer to delete. At most one timer exists per
 * key, namespace, timestamp and domain (Flink's namespaces: a window operator's timers are
 * namespaced by window, so deleting one window's timer never deletes another's).
 */
export class InternalTimerService {
  readonly domain: TimeDomain;
  readonly #context: InternalKeyContext;
  readonly #queue = new HeapPriorityQueue<TimerHeapInternalTimer>(compareTimers);
  /** Indexed by key group minus the range start. */
  readonly groups: (Map<StateKey, Map<number | string, TimerHeapInternalTimer>> | undefined)[];
  #nextSequence = 0;
  readonly #description: string;
  /** What a pending asynchronous snapshot needs kept of the key groups it has not written yet (a key's timers as they were). */
  readonly cow = new CopyOnWriteGroups();
  /** With incremental checkpoints: the keys whose timers changed since the last barrier. */
  dirty: DirtyKeys | undefined;

  constructor(domain: TimeDomain, context: InternalKeyContext, keyGroupCount: number) {
    this.domain = domain;
    this.#context = context;
    this.groups = new Array(keyGroupCount).fill(undefined);
    this.#description = `a ${domain}-time timer`;
  }

  get size(): number {
    return this.#queue.size;
  }

  /** Registers a timer for the current key; returns false when it already existed. */
  register(timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      throw new WeirError('INVALID_TIMER', `${this.#description} of operator "${this.#context.operatorName}" was registered for ${timestamp}`, {
        hint: 'register timers for a finite timestamp in milliseconds',
      });
    }
    const context = this.#context;
    return this.add(context.currentKey as StateKey, timestamp, namespace, context.requireKeyGroupIndex(this.#description));
  }

  /** Adds a timer for `key` in the key group at `keyGroupIndex`; returns false when it already existed. */
  add(key: StateKey, timestamp: number, namespace: string, keyGroupIndex: number): boolean {
    let group = this.groups[keyGroupIndex];
    if (group === undefined) {
      group = new Map();
      this.groups[keyGroupIndex] = group;
    }
    const id = timerId(timestamp, namespace);
    let timers = group.get(key);
    if (this.cow.pending?.[keyGroupIndex] === 1) this.cow.touch(keyGroupIndex, key, group, copyTimers);
    this.dirty?.mark(keyGroupIndex, key);
    if (timers === undefined) {
      timers = new Map();
      group.set(key, timers);
    } else if (timers.has(id)) {
      return false;
    }
    const timer = new TimerHeapInternalTimer(key, timestamp, namespace, keyGroupIndex, this.#nextSequence++);
    timers.set(id, timer);
    this.#queue.add(timer);
    return true;
  }

  /** Deletes the current key's timer at `timestamp` in `namespace`; returns whether there was one. */
  delete(timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    const context = this.#context;
    const index = context.requireKeyGroupIndex(this.#description);
    const timers = this.groups[index]?.get(context.currentKey as StateKey);
    const timer = timers?.get(timerId(timestamp, namespace));
    if (timer === undefined) return false;
    this.#forget(timer);
    this.#queue.remove(timer);
    return true;
  }

  /** The earliest timestamp of any timer, or undefined. */
  nextTimestamp(): number | undefined {
    return this.#queue.peek()?.timestamp;
  }

  /** Takes out the earliest timer if its timestamp is at most `time`. */
  pollUpTo(time: number): TimerHeapInternalTimer | undefined {
    const head = this.#queue.peek();
    if (head === undefined || head.timestamp > time) return undefined;
    this.#queue.poll();
    this.#forget(head);
    return head;
  }

  /** Deletes every timer of `key` in the key group at `keyGroupIndex` (a restore applying an incremental snapshot). */
  removeKey(key: StateKey, keyGroupIndex: number): void {
    const timers = this.groups[keyGroupIndex]?.get(key);
    if (timers === undefined) return;
    for (const timer of [...timers.values()]) {
      this.#forget(timer);
      this.#queue.remove(timer);
    }
  }

  /** Whether there are no timers. */
  isEmpty(): boolean {
    return this.#queue.size === 0;
  }

  #forget(timer: TimerHeapInternalTimer): void {
    const group = this.groups[timer.keyGroupIndex]!;
    if (this.cow.pending?.[timer.keyGroupIndex] === 1) this.cow.touch(timer.keyGroupIndex, timer.key, group, copyTimers);
    this.dirty?.mark(timer.keyGroupIndex, timer.key);
    const timers = group.get(timer.key)!;
    timers.delete(timerId(timer.timestamp, timer.namespace));
    if (timers.size === 0) group.delete(timer.key);
  }
}

/** A key's timers as they are: the map is changed in place, its timers never are. */
function copyTimers(timers: Map<number | string, TimerHeapInternalTimer>): Map<number | string, TimerHeapInternalTimer> {
  return new Map(timers);
}
