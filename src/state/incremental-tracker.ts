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
  /** Barriers whose later changes a snapshot still reads ({@link pin}): their epochs are kept. */
  readonly #pins: number[] = [];

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
      this.#drop(checkpointId);
    }
    const next: Epoch = { checkpointId: Number.NaN, tables: new Map(), timers: [new DirtyKeys(this.#keyGroupCount), new DirtyKeys(this.#keyGroupCount)] };
    this.#current = next;
    for (const table of tables) this.attach(table);
    timers[0].dirty = next.timers[0];
    timers[1].dirty = next.timers[1];
    if (base === undefined || base < this.#since || base >= checkpointId) return undefined;
    return deltaOf(
      base,
      this.#epochs.filter((epoch) => epoch.checkpointId > base),
    );
  }

  /** Checkpoint `checkpointId` completed: the changes up to its barrier are in it. */
  confirm(checkpointId: number): void {
    this.#drop(checkpointId);
  }

  /**
   * Keeps the changes after the barrier of `checkpointId` (its epochs are not dropped) until
   * {@link unpin}: a snapshot that reads them later (the disk backend's base, whose file copy ends
   * after the barrier) asks {@link changedSince} then.
   */
  pin(checkpointId: number): void {
    this.#pins.push(checkpointId);
  }

  unpin(checkpointId: number): void {
    const at = this.#pins.indexOf(checkpointId);
    if (at >= 0) this.#pins.splice(at, 1);
  }

  /**
   * Every key changed after the barrier of pinned checkpoint `checkpointId` up to now (the epochs
   * closed since, and the open one: keys marked later show too, which a reader of values at that
   * barrier may write as well).
   */
  changedSince(checkpointId: number): DeltaKeys {
    const epochs = this.#epochs.filter((epoch) => epoch.checkpointId > checkpointId);
    if (this.#current !== undefined) epochs.push(this.#current);
    return deltaOf(checkpointId, epochs);
  }

  /** Drops the epochs up to `checkpointId`'s barrier, but none a pin needs. */
  #drop(checkpointId: number): void {
    const upTo = Math.min(checkpointId, ...this.#pins);
    this.#epochs = this.#epochs.filter((epoch) => epoch.checkpointId > upTo);
  }
}

/** The keys of `epochs`, united per key group as a writer reaches it (O(epochs x states) here). */
function deltaOf(base: number, epochs: readonly Epoch[]): DeltaKeys {
  const names = new Set(epochs.flatMap((epoch) => [...epoch.tables.keys()]));
  return {
    base,
    tables: new Map([...names].map((name) => [name, new ChangedKeys(epochs.flatMap((epoch) => epoch.tables.get(name) ?? []))])),
    timers: [new ChangedKeys(epochs.map((epoch) => epoch.timers[0])), new ChangedKeys(epochs.map((epoch) => epoch.timers[1]))],
  };
}
