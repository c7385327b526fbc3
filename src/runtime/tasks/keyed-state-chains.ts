import type { StateHandle } from '../../checkpoint/storage/checkpoint-metadata.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** One snapshot file of a chain, and the checkpoint whose folder holds it. */
interface Link {
  checkpointId: number;
  handle: StateHandle;
}

/** After this many changes on one full snapshot, the next snapshot is full again (checkpointing.incrementalMaxChanges' default). */
export const DEFAULT_MAX_CHANGES = 8;

/**
 * While a base is materialized beside the chain, the chain goes on up to this many times
 * `maxChanges` changes; past it (materializations that keep failing) the next snapshot is full.
 */
const BESIDE_CHANGES_FACTOR = 8;

/** What a keyed snapshot adds to: the completed checkpoint and its chain (a full snapshot, then changes). */
export interface ChainBase {
  checkpointId: number;
  chain: readonly Link[];
  /** Also take a base at this barrier, written beside the chain (the snapshot itself still adds to `chain`). */
  materialize?: boolean;
}

/** A base taken at the barrier of `checkpointId` and written beside the chain; `handle` once written. */
interface Materialization {
  checkpointId: number;
  handle?: StateHandle;
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

  /** uid -> the latest base materialized beside its chain (or being written). */
  readonly #materialized = new Map<string, Materialization>();

  /**
   * The base a snapshot of `uid` at a barrier with `incrementalBase` adds to; undefined: write it
   * full. `beside`: the backend can materialize a base beside the chain (`materialize` asks for it).
   */
  baseFor(uid: string, incrementalBase: number | undefined, beside = false): ChainBase | undefined {
    if (incrementalBase === undefined) return undefined;
    const chains = this.#written.get(uid);
    // Chains older than the base can never be one again: the coordinator's latest completed only rises.
    if (chains !== undefined) for (const id of chains.keys()) if (id < incrementalBase) chains.delete(id);
    let chain = chains?.get(incrementalBase);
    if (chain === undefined) return undefined;
    const materialized = this.#materialized.get(uid);
    if (materialized?.handle !== undefined) chain = rebased(chain, materialized.checkpointId, materialized.handle);
    const full = (chain[0] as Link).handle.size;
    let changes = 0;
    for (let i = 1; i < chain.length; i++) changes += (chain[i] as Link).handle.size;
    if (chain.length - 1 < this.#maxChanges && changes < full) return { checkpointId: incrementalBase, chain };
    if (!beside) return undefined;
    // No base being written: take one at this barrier. One being written: the chain goes on meanwhile.
    if (materialized === undefined || materialized.handle !== undefined) return { checkpointId: incrementalBase, chain, materialize: true };
    return chain.length - 1 >= this.#maxChanges * BESIDE_CHANGES_FACTOR ? undefined : { checkpointId: incrementalBase, chain };
  }

  /** A base of `uid` is being written beside the chain, taken at the barrier of `checkpointId`. */
  materializing(uid: string, checkpointId: number): void {
    this.#materialized.set(uid, { checkpointId });
  }

  /** The base of `uid` taken at `checkpointId` is written (in that checkpoint's folder). */
  materialized(uid: string, checkpointId: number, handle: StateHandle): void {
    const current = this.#materialized.get(uid);
    if (current?.checkpointId === checkpointId) current.handle = handle;
  }

  /** The base of `uid` taken at `checkpointId` failed or was given up: a later barrier takes another. */
  materializationFailed(uid: string, checkpointId: number): void {
    if (this.#materialized.get(uid)?.checkpointId === checkpointId) this.#materialized.delete(uid);
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

  /** Checkpoint `checkpointId` was aborted: nothing adds to it (nor to a base taken at its barrier: its folder goes). */
  aborted(checkpointId: number): void {
    for (const chains of this.#written.values()) chains.delete(checkpointId);
    for (const [uid, materialized] of this.#materialized) if (materialized.checkpointId === checkpointId) this.#materialized.delete(uid);
  }
}

/**
 * `chain` on the base taken at the barrier of `at` instead, when it holds that barrier's change and
 * starts before it: the base, then the chain's changes after `at`. Otherwise `chain` as it is.
 */
function rebased(chain: readonly Link[], at: number, handle: StateHandle): readonly Link[] {
  if ((chain[0] as Link).checkpointId >= at || !chain.some((link) => link.checkpointId === at)) return chain;
  return [{ checkpointId: at, handle }, ...chain.filter((link) => link.checkpointId > at)];
}
