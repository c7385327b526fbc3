import type { StateKey } from '../core/state/state-key.ts';

/** A preimage of a key that had no value at the barrier. */
export const ABSENT: unique symbol = Symbol('absent at the barrier');

/** A preimage that could not be copied: the snapshot writer serializes the original and fails with the user's error. */
export class UncloneableValue {
  readonly original: unknown;
  constructor(original: unknown) {
    this.original = original;
  }
}

/**
 * The copy-on-write bookkeeping of one keyed structure (a state table, a timer service) while an
 * asynchronous snapshot is pending (the idea of Flink's CopyOnWriteStateTable, on one JavaScript
 * thread): at the barrier every key group is marked pending, an O(key groups) step; until the
 * snapshot writer has written a group, the first access to a key of that group that may change it
 * keeps the key's value as it was at the barrier (its preimage: a copy when the caller may mutate
 * the value in place, or {@link ABSENT}). A key pays at most one copy per checkpoint, and only
 * while its group waits to be written; the writer reads a preimage where there is one, the live
 * value otherwise (untouched since the barrier), then forgets the group's preimages.
 */
export class CopyOnWriteGroups {
  /** Per key group index: 1 while the pending snapshot has not written it. Undefined when no snapshot is pending. */
  pending: Uint8Array | undefined;
  /** Per key group index: key -> its value at the barrier. */
  preimages: (Map<StateKey, unknown> | undefined)[] = [];

  /** The barrier: every key group is pending. */
  begin(keyGroupCount: number): void {
    this.pending = new Uint8Array(keyGroupCount).fill(1);
    this.preimages = new Array(keyGroupCount);
  }

  /** Keeps `key`'s value in `group` as it is now, once (call only when `pending[index] === 1`). */
  touch<V>(index: number, key: StateKey, group: Map<StateKey, V> | undefined, copy: ((value: V) => unknown) | undefined): void {
    let preimages = this.preimages[index];
    if (preimages === undefined) {
      preimages = new Map();
      this.preimages[index] = preimages;
    } else if (preimages.has(key)) {
      return;
    }
    const value = group?.get(key);
    preimages.set(key, value === undefined ? ABSENT : copy === undefined ? value : copy(value));
  }

  /** The writer has written key group `index`: writes to it are free again. */
  finish(index: number): void {
    const pending = this.pending;
    if (pending === undefined) return;
    pending[index] = 0;
    this.preimages[index] = undefined;
  }

  /** The snapshot is written or given up. */
  end(): void {
    this.pending = undefined;
    this.preimages = [];
  }
}

/**
 * A copy of a state value that the operator may go on mutating in place (a list it pushes to, a map
 * it sets, an accumulator, a TTL stamp): primitives as they are, plain objects, arrays, Maps, Sets
 * and Dates copied deeply by hand (fast), anything else with structuredClone (what v8 serialize
 * writes of it). A value that cannot be cloned is kept as {@link UncloneableValue}.
 */
export function copyStateValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  try {
    return deepCopy(value);
  } catch {
    return new UncloneableValue(value);
  }
}

function deepCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const copy = new Array(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = deepCopy(value[i]);
    return copy;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) {
    const copy: Record<string, unknown> = {};
    for (const key in value) copy[key] = deepCopy((value as Record<string, unknown>)[key]);
    return copy;
  }
  if (value instanceof Map) {
    const copy = new Map();
    for (const [key, entry] of value) copy.set(key, deepCopy(entry));
    return copy;
  }
  if (value instanceof Set) {
    const copy = new Set();
    for (const entry of value) copy.add(deepCopy(entry));
    return copy;
  }
  if (value instanceof Date) return new Date(value.getTime());
  return structuredClone(value);
}
