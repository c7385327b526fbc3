import { ChangedKeys, type DirtyBudget, DirtyKeys, type DirtyKeysSpill } from './dirty-keys.ts';

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

/** The changes between two barriers: closed at the barrier of `checkpointId`; `seq` names it in a spill. */
interface Epoch {
  seq: number;
  checkpointId: number;
  tables: Map<string, DirtyKeys>;
  timers: readonly [DirtyKeys, DirtyKeys];
}

/**
 * More unconfirmed epochs than this (checkpoints failing in a row): tracking starts again from a
 * full snapshot. Epochs kept only for a pin (a base beside the chain, which may take longer than
 * this many checkpoints) are confirmed ones and do not count.
 */
const MAX_UNCONFIRMED_EPOCHS = 16;
/** Keys a spill moves at a time past the limit (about 20 ms of lmdb writes). */
const SPILL_CHUNK = 16_384;
/** Structure ids of the time domains' changed keys in a spill (a state table's is its order of first use). */
const TIMER_STRUCTURES = [0xfffe, 0xffff] as const;

/** Where a tracker moves changed keys once it holds `limit` of them in memory. */
export interface TrackerSpill {
  spill: DirtyKeysSpill;
  limit: number;
}

/**
 * What both backends' incremental checkpoints need (the changelog idea of Flink's FLIP-158, kept
 * as key sets, not as a log): which keys changed between barriers. From the first snapshot on, every
 * state table and timer service marks the keys it changes in the current epoch; each barrier closes
 * the epoch under its checkpoint id. A snapshot at barrier N can then be written as the changes since
 * an earlier checkpoint C that completed: the values at N of the keys of every epoch after C (deleted
 * ones as deletions). Epochs up to a completed checkpoint are dropped when it is confirmed; an epoch
 * holds only keys (the values are read at the barrier: the heap's copy-on-write preimages, the
 * disk backend's lmdb read transaction). With a spill (the disk backend's), the keys held in memory
 * are bounded: past the limit every epoch's keys move to the spill (lmdb), and are read back with
 * the ones in memory as a snapshot reaches each key group, so a checkpoint that takes long (a base
 * of a large store) does not hold every key changed meanwhile in memory. A dropped epoch's spilled
 * keys go at the next barrier, when no snapshot that may read them is pending (the backend finishes
 * its pending one first; a base's are pinned).
 */
export class IncrementalTracker {
  readonly #keyGroupCount: number;
  /** The barrier tracking started at: changes after it are all in the epochs; undefined before the first barrier. */
  #since: number | undefined;
  #epochs: Epoch[] = [];
  #current: Epoch | undefined;
  /** The latest confirmed checkpoint: epochs up to it are kept only for pins. */
  #confirmed: number | undefined;
  /** Barriers whose later changes a snapshot still reads ({@link pin}): their epochs are kept. */
  readonly #pins: number[] = [];
  readonly #spill: DirtyKeysSpill | undefined;
  readonly #budget: DirtyBudget | undefined;
  #nextSeq = 0;
  /** Structure ids of state tables in the spill, by name. */
  readonly #structures = new Map<string, number>();
  /** Dropped epochs whose spilled keys go at the next barrier. */
  #dropQueue: number[] = [];

  constructor(keyGroupCount: number, spill?: TrackerSpill) {
    this.#keyGroupCount = keyGroupCount;
    this.#spill = spill?.spill;
    this.#budget = spill === undefined ? undefined : { count: 0, limit: spill.limit, overflow: () => this.#overflow() };
  }

  /** Keys held in memory (what the spill's limit counts). */
  get keysInMemory(): number {
    let count = 0;
    for (const epoch of this.#current === undefined ? this.#epochs : [...this.#epochs, this.#current]) {
      for (const dirty of epoch.tables.values()) count += dirty.size;
      count += epoch.timers[0].size + epoch.timers[1].size;
    }
    return count;
  }

  /** A state table made after tracking started marks its changes too. */
  attach(table: NamedDirtyTracking): void {
    const current = this.#current;
    if (current === undefined) return;
    let dirty = current.tables.get(table.name);
    if (dirty === undefined) {
      dirty = new DirtyKeys(this.#keyGroupCount, this.#budget);
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
    for (const seq of this.#dropQueue) this.#spill?.drop(seq);
    this.#dropQueue = [];
    const closed = this.#current;
    if (closed !== undefined) {
      closed.checkpointId = checkpointId;
      this.#epochs.push(closed);
    }
    if (this.#since === undefined || this.#unconfirmedEpochs() > MAX_UNCONFIRMED_EPOCHS) {
      this.#since = checkpointId;
      this.#drop(checkpointId);
    }
    this.#open(tables, timers);
    if (base === undefined || base < this.#since || base >= checkpointId) return undefined;
    return deltaOf(
      base,
      this.#epochs.filter((epoch) => epoch.checkpointId > base),
    );
  }

  /**
   * Tracks from now on, as changes after the barrier of `checkpointId`: the checkpoint a backend
   * was just restored from (at the same key groups), so the first barrier's snapshot can add to it
   * instead of being full. Nothing when tracking has begun.
   */
  startAt(checkpointId: number, tables: Iterable<NamedDirtyTracking>, timers: readonly [DirtyTracking, DirtyTracking]): void {
    if (this.#since !== undefined) return;
    this.#since = checkpointId;
    this.#open(tables, timers);
  }

  /** Opens the next epoch: every table and both timer domains mark their changes in it. */
  #open(tables: Iterable<NamedDirtyTracking>, timers: readonly [DirtyTracking, DirtyTracking]): void {
    const next: Epoch = {
      seq: this.#nextSeq++,
      checkpointId: Number.NaN,
      tables: new Map(),
      timers: [new DirtyKeys(this.#keyGroupCount, this.#budget), new DirtyKeys(this.#keyGroupCount, this.#budget)],
    };
    this.#current = next;
    for (const table of tables) this.attach(table);
    timers[0].dirty = next.timers[0];
    timers[1].dirty = next.timers[1];
  }

  /** Checkpoint `checkpointId` completed: the changes up to its barrier are in it. */
  confirm(checkpointId: number): void {
    this.#confirmed = Math.max(this.#confirmed ?? checkpointId, checkpointId);
    this.#drop(checkpointId);
  }

  /** The epochs after the latest confirmed checkpoint (and after tracking last started): those a failing run piles up. */
  #unconfirmedEpochs(): number {
    const floor = Math.max(this.#since ?? Number.NEGATIVE_INFINITY, this.#confirmed ?? Number.NEGATIVE_INFINITY);
    let count = 0;
    for (const epoch of this.#epochs) if (epoch.checkpointId > floor) count++;
    return count;
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

  /** Drops the epochs up to `checkpointId`'s barrier, but none a pin needs; their spilled keys go at the next barrier. */
  #drop(checkpointId: number): void {
    const upTo = Math.min(checkpointId, ...this.#pins);
    const kept: Epoch[] = [];
    for (const epoch of this.#epochs) {
      if (epoch.checkpointId > upTo) {
        kept.push(epoch);
        continue;
      }
      const parts = [...epoch.tables.values(), ...epoch.timers];
      if (this.#budget !== undefined) for (const part of parts) this.#budget.count = Math.max(0, this.#budget.count - part.size);
      if (parts.some((part) => part.spilled)) this.#dropQueue.push(epoch.seq);
    }
    this.#epochs = kept;
  }

  /**
   * Too many keys in memory: key groups' keys go to the spill, oldest epochs first, until
   * {@link SPILL_CHUNK} fewer than the limit are left, so the task stands still for a chunk's
   * writes at a time (about 20 ms), not for every key held.
   */
  #overflow(): void {
    const spill = this.#spill as DirtyKeysSpill;
    const budget = this.#budget as DirtyBudget;
    const target = Math.max(0, budget.limit - SPILL_CHUNK);
    for (const epoch of this.#current === undefined ? this.#epochs : [...this.#epochs, this.#current]) {
      const parts: [DirtyKeys, number][] = [...epoch.tables].map(([name, dirty]) => [dirty, this.#structureOf(name)]);
      parts.push([epoch.timers[0], TIMER_STRUCTURES[0]], [epoch.timers[1], TIMER_STRUCTURES[1]]);
      for (const [dirty, structure] of parts) {
        if (budget.count <= target) return;
        budget.count -= dirty.spillTo(spill, epoch.seq, structure, budget.count - target);
      }
    }
    budget.count = Math.max(0, budget.count);
  }

  #structureOf(name: string): number {
    let id = this.#structures.get(name);
    if (id === undefined) {
      id = this.#structures.size;
      this.#structures.set(name, id);
    }
    return id;
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
