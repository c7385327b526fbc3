import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
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

  constructor(name: string, kind: StateKind, context: InternalKeyContext, keyGroupCount: number) {
    this.name = name;
    this.kind = kind;
    this.context = context;
    this.groups = new Array(keyGroupCount).fill(undefined);
    this.description = `${kind} state "${name}"`;
  }

  /** The stored value of the current key, or undefined. */
  get(): unknown {
    const context = this.context;
    return this.groups[context.requireKeyGroupIndex(this.description)]?.get(context.currentKey as StateKey);
  }

  /** Stores `value` for the current key. */
  put(value: unknown): void {
    const context = this.context;
    const index = context.requireKeyGroupIndex(this.description);
    let group = this.groups[index];
    if (group === undefined) {
      group = new Map();
      this.groups[index] = group;
    }
    group.set(context.currentKey as StateKey, value);
  }

  /** Forgets the current key's value. */
  remove(): void {
    const context = this.context;
    this.groups[context.requireKeyGroupIndex(this.description)]?.delete(context.currentKey as StateKey);
  }

  /** Whether no key has a value. */
  isEmpty(): boolean {
    for (const group of this.groups) if (group !== undefined && group.size > 0) return false;
    return true;
  }
}
