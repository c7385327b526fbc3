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

/** The union of several structures' changed keys, per key group index (the sets of one of them reused when it is alone). */
export function unionOfDirtyKeys(parts: readonly DirtyKeys[], keyGroupCount: number): (Set<StateKey> | undefined)[] {
  if (parts.length === 1) return (parts[0] as DirtyKeys).groups;
  const union: (Set<StateKey> | undefined)[] = new Array(keyGroupCount);
  for (let index = 0; index < keyGroupCount; index++) {
    let keys: Set<StateKey> | undefined;
    for (const part of parts) {
      const more = part.groups[index];
      if (more === undefined) continue;
      if (keys === undefined) keys = new Set(more);
      else for (const key of more) keys.add(key);
    }
    union[index] = keys;
  }
  return union;
}
