import type { StateTtl } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import { CopyOnWriteGroups, copyStateValue } from './copy-on-write-groups.ts';
import type { DirtyKeys } from './dirty-keys.ts';
import type { InternalKeyContext } from './internal-key-context.ts';

/**
 * The data of one keyed state in a heap backend (Flink's `StateTable`): per key group of the
 * backend's range, a map from key to the stored value (`T` for value and reducing state, `T[]` for
 * list state, a `Map` for map state, the accumulator for aggregating state). Key groups are kept
 * apart so a snapshot can write and a restore can pick them one by one.
 */
export class StateTable {
  readonly name: string;
  readonly kind: StateKind;
  readonly context: InternalKeyContext;
  /** Indexed by key group minus the range start; a group's map is created on first write. */
  readonly groups: (Map<StateKey, unknown> | undefined)[];
  /** `kind state "name"`, for errors. */
  readonly description: string;
  /** The processing time TTL stamps and checks use. */
  readonly clock: () => number;
  /** Whether the values are TTL-wrapped ({ v, t }): set by a TTL descriptor or by a restored snapshot that says so. */
  ttlWrapped = false;
  /** The TTL of the descriptor the operator asked for the state with. */
  ttl: StateTtl | undefined;
  /** What a pending asynchronous snapshot needs kept of the key groups it has not written yet. */
  readonly cow = new CopyOnWriteGroups();
  /** With incremental checkpoints: the keys changed since the last barrier (IncrementalTracker swaps it at each barrier). */
  dirty: DirtyKeys | undefined;
  /** Where the incremental cleanup goes on: the key group, and an iterator over its map. */
  #cleanupGroup = 0;
  #cleanupCursor: Iterator<[StateKey, unknown]> | undefined;

  constructor(name: string, kind: StateKind, context: InternalKeyContext, keyGroupCount: number, clock: () => number = Date.now) {
    this.name = name;
    this.kind = kind;
    this.context = context;
    this.groups = new Array(keyGroupCount).fill(undefined);
    this.description = `${kind} state "${name}"`;
    this.clock = clock;
  }

  /** Incremental TTL cleanup (Flink's heap cleanupIncrementally): checks the next `incrementalSize` keys of the table, all key groups in turn, and drops what expired. */
  cleanupStep(): void {
    const ttl = this.ttl;
    if (ttl === undefined || ttl.incrementalSize === 0) return;
    const now = this.clock();
    let visited = 0;
    let emptyGroups = 0;
    while (visited < ttl.incrementalSize && emptyGroups <= this.groups.length) {
      const next = this.#cleanupCursor?.next();
      if (next === undefined || next.done === true) {
        this.#cleanupGroup = (this.#cleanupGroup + 1) % this.groups.length;
        const group = this.groups[this.#cleanupGroup];
        this.#cleanupCursor = group?.entries();
        if (group === undefined || group.size === 0) emptyGroups++;
        continue;
      }
      emptyGroups = 0;
      visited++;
      const [key, value] = next.value;
      const live = liveValue(this.kind, value, ttl, now);
      if (live === value) continue;
      const group = this.groups[this.#cleanupGroup] as Map<StateKey, unknown>;
      if (this.cow.pending?.[this.#cleanupGroup] === 1) this.cow.touch(this.#cleanupGroup, key, group, undefined);
      this.dirty?.mark(this.#cleanupGroup, key);
      if (live === undefined) group.delete(key);
      else group.set(key, live);
    }
  }

  /** Drops every expired value (a restore, a checkpoint with fullSnapshot cleanup). */
  purgeExpired(): void {
    const ttl = this.ttl;
    if (ttl === undefined) return;
    const now = this.clock();
    const pending = this.cow.pending;
    for (let index = 0; index < this.groups.length; index++) {
      const group = this.groups[index];
      if (group === undefined) continue;
      for (const [key, value] of group) {
        const live = liveValue(this.kind, value, ttl, now);
        if (live === value) continue;
        if (pending?.[index] === 1) this.cow.touch(index, key, group, undefined);
        this.dirty?.mark(index, key);
        if (live === undefined) group.delete(key);
        else group.set(key, live);
      }
    }
  }

  /**
   * The stored value of the current key, or undefined. The caller may mutate it in place (a list's
   * push, a map's set, a TTL stamp): while a snapshot waits to write its key group, its value at
   * the barrier is copied first, once.
   */
  get(): unknown {
    const context = this.context;
    const index = context.requireKeyGroupIndex(this.description);
    const group = this.groups[index];
    if (this.cow.pending?.[index] === 1) this.cow.touch(index, context.currentKey as StateKey, group, copyStateValue);
    this.dirty?.mark(index, context.currentKey as StateKey);
    return group?.get(context.currentKey as StateKey);
  }

  /** Stores `value` for the current key. */
  put(value: unknown): void {
    const context = this.context;
    const index = context.requireKeyGroupIndex(this.description);
    let group = this.groups[index];
    if (this.cow.pending?.[index] === 1) this.cow.touch(index, context.currentKey as StateKey, group, undefined);
    this.dirty?.mark(index, context.currentKey as StateKey);
    if (group === undefined) {
      group = new Map();
      this.groups[index] = group;
    }
    group.set(context.currentKey as StateKey, value);
  }

  /** Forgets the current key's value. */
  remove(): void {
    const context = this.context;
    const index = context.requireKeyGroupIndex(this.description);
    const group = this.groups[index];
    if (group === undefined) return;
    if (this.cow.pending?.[index] === 1) this.cow.touch(index, context.currentKey as StateKey, group, undefined);
    this.dirty?.mark(index, context.currentKey as StateKey);
    group.delete(context.currentKey as StateKey);
  }

  /** Whether no key has a value. */
  isEmpty(): boolean {
    for (const group of this.groups) if (group !== undefined && group.size > 0) return false;
    return true;
  }
}

/** A value of a TTL state and the processing time it was last written (or read, with updateOnRead); persisted as it is. */
export interface TtlValue<T> {
  v: T;
  t: number;
}

/** Whether `entry` has expired at `now`. */
export function isExpired(entry: TtlValue<unknown>, ttl: StateTtl, now: number): boolean {
  return entry.t + ttl.ttlMs <= now;
}

/**
 * A stored TTL value without what expired: undefined when nothing is left; a list or map without
 * its expired elements (a new one; `value` itself when nothing expired). Never changes `value`: a
 * pending snapshot may still have to write it.
 */
export function liveValue(kind: StateKind, value: unknown, ttl: StateTtl, now: number): unknown {
  const expired = (entry: TtlValue<unknown>) => isExpired(entry, ttl, now);
  if (kind === 'list') {
    const entries = value as TtlValue<unknown>[];
    const live = entries.filter((entry) => !expired(entry));
    return live.length === 0 ? undefined : live.length === entries.length ? value : live;
  }
  if (kind === 'map') {
    const map = value as Map<unknown, TtlValue<unknown>>;
    let live: Map<unknown, TtlValue<unknown>> | undefined;
    for (const [key, entry] of map) {
      if (!expired(entry)) continue;
      live ??= new Map(map);
      live.delete(key);
    }
    return live === undefined ? value : live.size === 0 ? undefined : live;
  }
  return expired(value as TtlValue<unknown>) ? undefined : value;
}
