import type { StateKey } from '../core/state/state-key.ts';

/**
 * Where a tracker keeps changed keys past its memory budget (the disk backend: lmdb beside the
 * state), by epoch, structure (a state table or a time domain) and key group index.
 */
export interface DirtyKeysSpill {
  /** Keeps `keys` of one epoch, structure and key group index (the caller then forgets them). */
  write(epoch: number, structure: number, index: number, keys: Iterable<StateKey>): void;
  /** The keys kept of one epoch, structure and key group index. */
  read(epoch: number, structure: number, index: number): Iterable<StateKey>;
  /** Forgets every key of an epoch. */
  drop(epoch: number): void;
}

/** The keys a tracker holds in memory: past `limit`, `overflow` moves them to its spill. */
export interface DirtyBudget {
  count: number;
  limit: number;
  overflow(): void;
}

/**
 * The keys of one keyed structure (a state table, a timer service) changed since a barrier, per
 * key group index: what an incremental checkpoint writes (see IncrementalTracker). A read that may
 * change a value in place (a list, a map, an accumulator, a TTL stamp) counts as a change. With a
 * budget, each key new to the set counts in it; keys moved to a spill ({@link spillTo}) are read
 * back with the ones in memory ({@link keysOf}).
 */
export class DirtyKeys {
  /** Indexed by key group minus the range start; a group's set is created on its first change. */
  readonly groups: (Set<StateKey> | undefined)[];
  readonly #budget: DirtyBudget | undefined;
  /** Where keys of this set were moved to, under which epoch and structure; undefined while none were. */
  #spilled: { spill: DirtyKeysSpill; epoch: number; structure: number } | undefined;

  constructor(keyGroupCount: number, budget?: DirtyBudget) {
    this.groups = new Array(keyGroupCount);
    this.#budget = budget;
  }

  mark(index: number, key: StateKey): void {
    let keys = this.groups[index];
    if (keys === undefined) {
      keys = new Set();
      this.groups[index] = keys;
    }
    const budget = this.#budget;
    if (budget === undefined) {
      keys.add(key);
      return;
    }
    const before = keys.size;
    keys.add(key);
    if (keys.size !== before && ++budget.count > budget.limit) budget.overflow();
  }

  /** How many keys are in memory, over all key groups. */
  get size(): number {
    let size = 0;
    for (const keys of this.groups) if (keys !== undefined) size += keys.size;
    return size;
  }

  /** Whether keys of this set are in a spill. */
  get spilled(): boolean {
    return this.#spilled !== undefined;
  }

  /** Moves key groups' keys in memory to `spill` under `epoch` and `structure` until `atLeast` moved (or all); returns how many. */
  spillTo(spill: DirtyKeysSpill, epoch: number, structure: number, atLeast = Number.POSITIVE_INFINITY): number {
    let moved = 0;
    for (let index = 0; index < this.groups.length && moved < atLeast; index++) {
      const keys = this.groups[index];
      if (keys === undefined || keys.size === 0) continue;
      spill.write(epoch, structure, index, keys);
      moved += keys.size;
      keys.clear();
    }
    if (moved > 0) this.#spilled = { spill, epoch, structure };
    return moved;
  }

  /** The keys changed in key group `index`: the set in memory, or with spilled keys a new set of both (undefined: none). */
  keysOf(index: number): Set<StateKey> | undefined {
    const keys = this.groups[index];
    const spilled = this.#spilled;
    if (spilled === undefined) return keys;
    const all = new Set<StateKey>(spilled.spill.read(spilled.epoch, spilled.structure, index));
    if (keys !== undefined) for (const key of keys) all.add(key);
    return all.size === 0 ? undefined : all;
  }
}

/**
 * The keys one structure changed over several epochs (closed: never marked again), per key group
 * index. The union is made one key group at a time, as a snapshot writer reaches it, so the
 * synchronous part of a snapshot never costs the keys changed; a key group's set is used as it is
 * when one epoch alone changed it.
 */
export class ChangedKeys {
  readonly #parts: readonly DirtyKeys[];

  constructor(parts: readonly DirtyKeys[]) {
    this.#parts = parts;
  }

  /** The keys changed in key group `index` (undefined: none). */
  group(index: number): Set<StateKey> | undefined {
    let keys: Set<StateKey> | undefined;
    let owned = false;
    for (const part of this.#parts) {
      const more = part.keysOf(index);
      if (more === undefined || more.size === 0) continue;
      if (keys === undefined) keys = more;
      else {
        if (!owned) {
          keys = new Set(keys);
          owned = true;
        }
        for (const key of more) keys.add(key);
      }
    }
    return keys;
  }
}
