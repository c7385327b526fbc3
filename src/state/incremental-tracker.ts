import { ChangedKeys, DirtyKeys } from './dirty-keys.ts';

/**
 * A keyed structure that marks the keys it changes (either backend's: a heap StateTable or
 * InternalTimerService, a disk LmdbStateTable or LmdbTimerService): the tracker hands it the
 * current epoch's set at each barrier.
 */
export interface DirtyTracking {
  dirty: DirtyKeys | undefined;
}

/** A state table that marks its changed keys, by its state's name. */
export interface NamedDirtyTracking extends DirtyTracking {
  readonly name: string;
}

/** The keys an incremental snapshot writes, per key group index: every state's and both timer domains'. */
export interface DeltaKeys {
  /** The checkpoint the snapshot adds to: restored as that checkpoint's snapshots, then this one. */
  base: number;
  tables: Map<string, ChangedKeys>;
  /** Processing-time, then event-time timers. */
  timers: readonly [ChangedKeys, ChangedKeys];
}

/** The changes between two barriers: closed at the barrier of `checkpointId`. */
interface Epoch {
  checkpointId: number;
  tables: Map<string, DirtyKeys>;
  timers: readonly [DirtyKeys, DirtyKeys];
}

/** More unconfirmed epochs than this (checkpoints failing in a row): tracking starts again from a full snapshot. */
const MAX_UNCONFIRMED_EPOCHS = 16;

/**
 * What both backends' incremental checkpoints need (the changelog idea of Flink's FLIP-158, kept
 * as key sets, not as a log): which keys changed between barriers. From the first snapshot on, every
 * state table and timer service marks the keys it changes in the current epoch; each barrier closes
 * the epoch under its checkpoint id. A snapshot at barrier N can then be written as the changes since
 * an earlier checkpoint C that completed: the values at N of the keys of every epoch after C (deleted
 * ones as deletions). Epochs up to a completed checkpoint are dropped when it is confirmed; an epoch
 * holds only keys (the values are read at the barrier: the heap's copy-on-write preimages, the
 * disk backend's lmdb read transaction).
 */
export class IncrementalTracker {
  readonly #keyGroupCount: number;
  /** The barrier tracking started at: changes after it are all in the epochs; undefined before the first barrier. */
  #since: number | undefined;
  #epochs: Epoch[] = [];
  #current: Epoch | undefined;

  constructor(keyGroupCount: number) {
    this.#keyGroupCount = keyGroupCount;
  }

  /** A state table made after tracking started marks its changes too. */
  attach(table: NamedDirtyTracking): void {
    const current = this.#current;
    if (current === undefined) return;
    let dirty = current.tables.get(table.name);
    if (dirty === undefined) {
      dirty = new DirtyKeys(this.#keyGroupCount);
      current.tables.set(table.name, dirty);
    }
    table.dirty = dirty;
  }

  /**
   * The barrier of checkpoint `checkpointId`: closes the current epoch under it and opens the next.
   * Returns the keys of a snapshot that adds to checkpoint `base` (undefined: write a full one; no
   * base asked for, or the changes since it are not all known).
   */
  barrier(
    checkpointId: number,
    base: number | undefined,
    tables: Iterable<NamedDirtyTracking>,
    timers: readonly [DirtyTracking, DirtyTracking],
  ): DeltaKeys | undefined {
    const closed = this.#current;
    if (closed !== undefined) {
      closed.checkpointId = checkpointId;
      this.#epochs.push(closed);
    }
    if (this.#since === undefined || this.#epochs.length > MAX_UNCONFIRMED_EPOCHS) {
      this.#since = checkpointId;
      this.#epochs = [];
    }
    const next: Epoch = { checkpointId: Number.NaN, tables: new Map(), timers: [new DirtyKeys(this.#keyGroupCount), new DirtyKeys(this.#keyGroupCount)] };
    this.#current = next;
    for (const table of tables) this.attach(table);
    timers[0].dirty = next.timers[0];
    timers[1].dirty = next.timers[1];
    if (base === undefined || base < this.#since || base >= checkpointId) return undefined;
    // O(epochs x states): the keys are united per key group as the writer reaches it (ChangedKeys).
    const since = this.#epochs.filter((epoch) => epoch.checkpointId > base);
    const names = new Set(since.flatMap((epoch) => [...epoch.tables.keys()]));
    return {
      base,
      tables: new Map([...names].map((name) => [name, new ChangedKeys(since.flatMap((epoch) => epoch.tables.get(name) ?? []))])),
      timers: [new ChangedKeys(since.map((epoch) => epoch.timers[0])), new ChangedKeys(since.map((epoch) => epoch.timers[1]))],
    };
  }

  /** Checkpoint `checkpointId` completed: the changes up to its barrier are in it. */
  confirm(checkpointId: number): void {
    this.#epochs = this.#epochs.filter((epoch) => epoch.checkpointId > checkpointId);
  }
}
