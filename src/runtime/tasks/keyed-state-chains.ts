import type { StateHandle } from '../../checkpoint/storage/checkpoint-metadata.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** One snapshot file of a chain, and the checkpoint whose folder holds it. */
interface Link {
  checkpointId: number;
  handle: StateHandle;
}

/** After this many changes on one full snapshot, the next snapshot is full again (checkpointing.incrementalMaxChanges' default). */
export const DEFAULT_MAX_CHANGES = 8;

/** What a keyed snapshot adds to: the completed checkpoint and its chain (a full snapshot, then changes). */
export interface ChainBase {
  checkpointId: number;
  chain: readonly Link[];
}

/**
 * A task's incremental keyed state chains, per operator uid: which files each of its checkpoints
 * wrote (a full snapshot, then the changes on it, oldest first), so a snapshot that adds to the
 * latest completed checkpoint (the barrier's `incrementalBase`) names all of them in its
 * acknowledgement. A chain is materialized (the next snapshot full) once it holds `maxChanges`
 * changes (checkpointing.incrementalMaxChanges) or its changes add up to the full snapshot's size,
 * so a restore reads at most about twice the state.
 */
export class KeyedStateChains {
  readonly #maxChanges: number;

  constructor(maxChanges = DEFAULT_MAX_CHANGES) {
    this.#maxChanges = maxChanges;
  }

  /** uid -> checkpoint -> the chain that checkpoint's snapshot completes. */
  readonly #written = new Map<string, Map<number, readonly Link[]>>();

  /** The base a snapshot of `uid` at a barrier with `incrementalBase` adds to; undefined: write it full. */
  baseFor(uid: string, incrementalBase: number | undefined): ChainBase | undefined {
    if (incrementalBase === undefined) return undefined;
    const chains = this.#written.get(uid);
    // Chains older than the base can never be one again: the coordinator's latest completed only rises.
    if (chains !== undefined) for (const id of chains.keys()) if (id < incrementalBase) chains.delete(id);
    const chain = chains?.get(incrementalBase);
    if (chain === undefined) return undefined;
    const full = (chain[0] as Link).handle.size;
    let changes = 0;
    for (let i = 1; i < chain.length; i++) changes += (chain[i] as Link).handle.size;
    if (chain.length - 1 >= this.#maxChanges || changes >= full) return undefined;
    return { checkpointId: incrementalBase, chain };
  }

  /**
   * Checkpoint `checkpointId` wrote `handle` for `uid`, the changes on `base` (undefined: a full
   * snapshot). Returns the acknowledgement's handles: the full snapshot, then the changes, each
   * naming the checkpoint whose folder holds it when it is an earlier one.
   */
  written(uid: string, checkpointId: number, handle: StateHandle, base: ChainBase | undefined): { keyed: StateHandle; keyedChanges?: StateHandle[] } {
    if (base !== undefined && base.checkpointId >= checkpointId) {
      throw new WeirError('INVALID_INCREMENTAL_BASE', `checkpoint ${checkpointId} of "${uid}" cannot add to checkpoint ${base.checkpointId}`, {
        fault: 'internal',
      });
    }
    const chain = [...(base?.chain ?? []), { checkpointId, handle }];
    let chains = this.#written.get(uid);
    if (chains === undefined) {
      chains = new Map();
      this.#written.set(uid, chains);
    }
    chains.set(checkpointId, chain);
    const named = (link: Link): StateHandle => (link.checkpointId === checkpointId ? link.handle : { ...link.handle, checkpoint: link.checkpointId });
    const [first, ...changes] = chain;
    return changes.length === 0 ? { keyed: handle } : { keyed: named(first as Link), keyedChanges: changes.map(named) };
  }

  /** Checkpoint `checkpointId` was aborted: nothing adds to it. */
  aborted(checkpointId: number): void {
    for (const chains of this.#written.values()) chains.delete(checkpointId);
  }
}
