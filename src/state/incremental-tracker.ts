import type { StateKey } from '../core/state/state-key.ts';
import { DirtyKeys, unionOfDirtyKeys } from './dirty-keys.ts';
import type { InternalTimerService } from './internal-timer-service.ts';
import type { StateTable } from './state-table.ts';

/** The keys an incremental snapshot writes, per key group index: every state's and both timer domains'. */
export interface DeltaKeys {
  /** The checkpoint the snapshot adds to: restored as that checkpoint's snapshots, then this one. */
  base: number;
  tables: Map<string, (Set<StateKey> | undefined)[]>;
  /** Processing-time, then event-time timers. */
  timers: readonly [(Set<StateKey> | undefined)[], (Set<StateKey> | undefined)[]];
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
 * What a heap backend's incremental checkpoints need (the changelog idea of Flink's FLIP-158, kept
 * as key sets, not as a log): which keys changed between barriers. From the first snapshot on, every
 * state table and timer service marks the keys it changes in the current epoch; each barrier closes
 * the epoch under its checkpoint id. A snapshot at barrier N can then be written as the changes since
 * an earlier checkpoint C that completed: the values at N of the keys of every epoch after C (deleted
 * ones as deletions). Epochs up to a completed checkpoint are dropped when it is confirmed; an epoch
 * holds only keys (the values are read at the barrier, copy-on-write).
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
  attach(table: StateTable): void {
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
    tables: Iterable<StateTable>,
    timers: readonly [InternalTimerService, InternalTimerService],
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
    const since = this.#epochs.filter((epoch) => epoch.checkpointId > base);
    const names = new Set(since.flatMap((epoch) => [...epoch.tables.keys()]));
    const union = (parts: DirtyKeys[]) => unionOfDirtyKeys(parts, this.#keyGroupCount);
    return {
      base,
      tables: new Map([...names].map((name) => [name, union(since.flatMap((epoch) => (epoch.tables.has(name) ? [epoch.tables.get(name) as DirtyKeys] : [])))])),
      timers: [union(since.map((epoch) => epoch.timers[0])), union(since.map((epoch) => epoch.timers[1]))],
    };
  }

  /** Checkpoint `checkpointId` completed: the changes up to its barrier are in it. */
  confirm(checkpointId: number): void {
    this.#epochs = this.#epochs.filter((epoch) => epoch.checkpointId > checkpointId);
  }
}
