import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';

/**
 * The current key of a keyed backend (Flink's `InternalKeyContext`), shared by the backend, its
 * state objects and its timer services. `keyGroupIndex` is the current key's key group minus the
 * first key group of the backend's range, cached so state access does not hash the key again; it is
 * -1 while no key is set.
 */
export class InternalKeyContext {
  readonly operatorName: string;
  readonly keyGroupStart: number;
  currentKey: StateKey | undefined = undefined;
  keyGroupIndex = -1;

  constructor(operatorName: string, keyGroupStart: number) {
    this.operatorName = operatorName;
    this.keyGroupStart = keyGroupStart;
  }

  /** The cached key group index, or a user error when keyed state is used without a current key. */
  requireKeyGroupIndex(what: string): number {
    const index = this.keyGroupIndex;
    if (index < 0) throw this.noCurrentKey(what);
    return index;
  }

  noCurrentKey(what: string): WeirError {
    return new WeirError('NO_CURRENT_KEY', `${what} of operator "${this.operatorName}" was used without a current key`, {
      hint: 'keyed state and timers can only be used on a keyed stream (after keyBy), while processing a record or a timer',
    });
  }
}
