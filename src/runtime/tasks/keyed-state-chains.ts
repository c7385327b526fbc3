import type { StateHandle } from '../../checkpoint/storage/checkpoint-metadata.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** One snapshot file of a chain, and the checkpoint whose folder holds it. */
export interface Link {
  checkpointId: number;
  handle: StateHandle;
}

/** After this many changes on one full snapshot, the next snapshot is full again (checkpointing.incrementalMaxChanges' default). */
export const DEFAULT_MAX_CHANGES = 8;

/** After this many bases beside the chain failed in a row, the next snapshot is full (a storage that cannot take a base fails that checkpoint, loudly). */
const MAX_FAILED_MATERIALIZATIONS = 3;

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
  /** When it was taken and when it was written (the clock's ms). */
  startedAt: number;
  endedAt?: number;
  handle?: StateHandle;
  /** The written base this one took the place of: back in its place when this one fails or its checkpoint aborts. */
  replaced?: Materialization;
}

/**
 * A task's incremental keyed state chains, per operator uid: which files each of its checkpoints
 * wrote (a full snapshot, then the changes on it, oldest first), so a snapshot that adds to the
 * latest completed checkpoint (the barrier's `incrementalBase`) names all of them in its
 * acknowledgement. A chain is materialized (the next snapshot full) once it holds `maxChanges`
 * changes (checkpointing.incrementalMaxChanges) or its changes add up to the full snapshot's size,
 * so a restore reads at most about twice the state.
 *
 * A backend that can write its base beside the chain (the disk backend: lmdb's file, which takes
 * half a minute at tens of millions of keys) is not asked for a full snapshot then: the snapshot at
 * that barrier adds to the chain as usual and also takes a base (FLIP-158's materialization),
 * written while the next checkpoints go on adding to the old chain. Once written, the first snapshot
 * on a chain that holds that barrier's change starts a new chain: the base, then the chain's changes
 * after that barrier (each holds every key changed since its own base's barrier, at or before the
 * materialized one, so applied onto the base they give the state). Until then the base's file is in
 * a completed checkpoint's folder that the chain references (that barrier's change), so retention
 * keeps it; a base of a checkpoint that was aborted is never used (no chain holds its change). A
 * base is taken no sooner after the previous one was written than that one took, so bases keep the
 * disk busy at most about half the time, whatever the checkpoint interval.
 */
export class KeyedStateChains {
  readonly #maxChanges: number;

  readonly #now: () => number;

  constructor(maxChanges = DEFAULT_MAX_CHANGES, now: () => number = () => performance.now()) {
    this.#maxChanges = maxChanges;
    this.#now = now;
  }

  /** uid -> checkpoint -> the chain that checkpoint's snapshot completes. */
  readonly #written = new Map<string, Map<number, readonly Link[]>>();

  /** uid -> the latest base materialized beside its chain (or being written). */
  readonly #materialized = new Map<string, Materialization>();
  /** uid -> bases beside its chain that failed in a row. */
  readonly #failures = new Map<string, number>();

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
    const goOn = { checkpointId: incrementalBase, chain };
    // A base being written: the chain goes on meanwhile; the last one written: not sooner than it took.
    if (materialized !== undefined && materialized.endedAt === undefined) return goOn;
    if (materialized?.endedAt !== undefined && this.#now() - materialized.endedAt < materialized.endedAt - materialized.startedAt) return goOn;
    if ((this.#failures.get(uid) ?? 0) >= MAX_FAILED_MATERIALIZATIONS) {
      this.#failures.delete(uid);
      return undefined;
    }
    return { ...goOn, materialize: true };
  }

  /**
   * The task restored `uid` from checkpoint `checkpointId` at the same key groups: its chain
   * (`links`: the full snapshot, then the changes, each with the checkpoint whose folder holds it)
   * is what the first snapshot adds to, once the backend tracks its changes from the restore on.
   */
  restored(uid: string, checkpointId: number, links: readonly Link[]): void {
    if (links.length > 0) this.#written.set(uid, new Map([[checkpointId, links]]));
  }

  /** A base of `uid` is being written beside the chain, taken at the barrier of `checkpointId`. */
  materializing(uid: string, checkpointId: number): void {
    const written = this.#materialized.get(uid);
    // A written base may not be in a chain yet (the barrier that takes this one is the first on it).
    const replaced = written?.handle === undefined ? undefined : { ...written, replaced: undefined };
    this.#materialized.set(uid, { checkpointId, startedAt: this.#now(), ...(replaced === undefined ? {} : { replaced }) });
  }

  /** The base of `uid` taken at `checkpointId` is written (in that checkpoint's folder). */
  materialized(uid: string, checkpointId: number, handle: StateHandle): void {
    const current = this.#materialized.get(uid);
    if (current?.checkpointId !== checkpointId) return;
    current.handle = handle;
    current.endedAt = this.#now();
    this.#failures.delete(uid);
  }

  /** The base of `uid` taken at `checkpointId` failed or was given up: a later barrier takes another. */
  materializationFailed(uid: string, checkpointId: number): void {
    if (this.#materialized.get(uid)?.checkpointId !== checkpointId) return;
    this.#forget(uid);
    this.#failures.set(uid, (this.#failures.get(uid) ?? 0) + 1);
  }

  /** The base being written for `uid` goes; the written one it took the place of (if any) is back. */
  #forget(uid: string): void {
    const replaced = this.#materialized.get(uid)?.replaced;
    if (replaced === undefined) this.#materialized.delete(uid);
    else this.#materialized.set(uid, replaced);
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
    for (const [uid, materialized] of this.#materialized) if (materialized.checkpointId === checkpointId) this.#forget(uid);
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
