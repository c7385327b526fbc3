import type { StateKey } from '../core/state/state-key.ts';

/**
 * The keys of one keyed structure (a state table, a timer service) changed since a barrier, per
 * key group index: what an incremental checkpoint writes (see IncrementalTracker). A read that may
 * change a value in place (a list, a map, an accumulator, a TTL stamp) counts as a change.
 */
export class DirtyKeys {
  /** Indexed by key group minus the range start; a group's set is created on its first change. */
  readonly groups: (Set<StateKey> | undefined)[];

  constructor(keyGroupCount: number) {
    this.groups = new Array(keyGroupCount);
  }

  mark(index: number, key: StateKey): void {
    let keys = this.groups[index];
    if (keys === undefined) {
      keys = new Set();
      this.groups[index] = keys;
    }
    keys.add(key);
  }

  /** How many keys changed, over all key groups. */
  get size(): number {
    let size = 0;
    for (const keys of this.groups) if (keys !== undefined) size += keys.size;
    return size;
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
      const more = part.groups[index];
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
