import { WeirError } from '../core/errors/weir-error.ts';
import type { AsyncKeyedStateSnapshot, CheckpointableKeyedStateBackend, IncrementalSnapshotRequest } from '../core/state/keyed-state-backend.ts';
import type { AnyStateDescriptor, StateDescriptor } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import { formatKey } from './format-key.ts';
import { type DeltaKeys, IncrementalTracker } from './incremental-tracker.ts';
import { VOID_NAMESPACE } from './internal-timer-service.ts';
import { type KeyGroupRange, keyGroupRange, keyGroupRangeSize } from './key-group-range.ts';
import { assignToKeyGroup } from './key-group-range-assignment.ts';
import { checkKeyedBackendOptions, keyOutsideRangeError, unknownTimeDomainError } from './keyed-backend-checks.ts';
import type { LmdbBase } from './lmdb-base-format.ts';
import { LmdbBaseSnapshot } from './lmdb-base-snapshot.ts';
import { applyDeltasToLmdb, openLmdbBase } from './lmdb-delta-restore.ts';
import { LmdbDirtySpill } from './lmdb-dirty-spill.ts';
import { FIRST_KEY, KeyWriter, MAX_KEY_BYTES, MAX_STATE_ID } from './lmdb-key-codec.ts';
import { type LmdbRestoreTarget, restoreIntoLmdb } from './lmdb-restore.ts';
import { LmdbSnapshotWriter, type SnapshotState } from './lmdb-snapshot-writer.ts';
import { createLmdbState, type LmdbKeyedState } from './lmdb-state-factory.ts';
import { LmdbKeyContext, LmdbStateTable } from './lmdb-state-table.ts';
import { LmdbStore, type LmdbStoreSettings } from './lmdb-store.ts';
import { type LmdbTimer, LmdbTimerService } from './lmdb-timer-service.ts';

export interface LmdbKeyedStateBackendOptions {
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  operatorName: string;
  /** The local working folder: emptied when the backend opens, deleted when it is disposed. */
  dir: string;
  settings?: LmdbStoreSettings;
  clock?: () => number;
  reinterpreted?: boolean;
  /**
   * A base of this key-group range and maxParallelism (an incremental checkpoint's full snapshot
   * of a disk backend): lmdb's file is opened as the store and its correction applied; the
   * checkpoint's later changes come with {@link LmdbKeyedStateBackend.restore}.
   */
  base?: LmdbBase;
}

/** Changed keys the incremental tracker holds in memory before it moves them into lmdb. */
const DEFAULT_CHANGED_KEYS_IN_MEMORY = 1_000_000;

/** Keys longer than this (encoded) leave no room for a map user key or a timer in lmdb's key limit. */
const MAX_STATE_KEY_BYTES = MAX_KEY_BYTES - 256;
const LAST_KEY = Buffer.alloc(3, 0xff);

/**
 * Keyed state and timers of one subtask in lmdb on local disk (Flink's
 * EmbeddedRocksDBStateBackend, on lmdb: see docs/architecture.md for why lmdb), so state is
 * bounded by the disk, not the V8 heap. Same contract and behaviour as the heap backend, same
 * canonical snapshot format (a job moves between the two through any checkpoint or savepoint),
 * snapshots taken asynchronously from an lmdb read transaction. Incremental checkpoints as the
 * heap's: its tables and timers mark the keys they write in the shared IncrementalTracker, and an
 * incremental snapshot reads those keys' values from the barrier's read transaction. Key layout:
 * lmdb-key-codec.ts.
 */
export class LmdbKeyedStateBackend implements CheckpointableKeyedStateBackend {
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly operatorName: string;
  readonly #store: LmdbStore;
  readonly #context: LmdbKeyContext;
  readonly #keyGroupCount: number;
  readonly #tables = new Map<string, LmdbStateTable>();
  readonly #tablesById: LmdbStateTable[] = [];
  readonly #states = new Map<string, LmdbKeyedState>();
  /** Tables brought in by a restore whose TTL is not known yet (purged of what expired when the operator asks for them). */
  readonly #restored = new Set<string>();
  readonly #processingTimers: LmdbTimerService;
  readonly #eventTimers: LmdbTimerService;
  readonly #clock: () => number;
  readonly #reinterpreted: boolean;
  readonly #changedKeysInMemory: number;
  readonly #keyWriter = new KeyWriter();
  readonly #everyRecordCleanup: LmdbStateTable[] = [];
  #pendingSnapshot: LmdbSnapshotWriter | undefined;
  /** Base snapshots whose file copy may still run (never finished at the next barrier: they do not hold the task). */
  readonly #pendingBases = new Set<LmdbBaseSnapshot>();
  /** lmdb copies still running (a base given up may leave one): lmdb must not close under them. */
  readonly #copies = new Set<Promise<void>>();
  /** Opened from a base: a restore adds the checkpoint's changes to it. */
  readonly #fromBase: boolean;
  /** Which keys changed between barriers, once an incremental snapshot was asked for (the heap's tracker: the tables and timers mark). */
  #incremental: IncrementalTracker | undefined;

  constructor(options: LmdbKeyedStateBackendOptions) {
    const { maxParallelism, keyGroupRange: range, operatorName } = options;
    checkKeyedBackendOptions(maxParallelism, range, operatorName);
    this.maxParallelism = maxParallelism;
    this.keyGroupRange = keyGroupRange(range.start, range.end);
    this.operatorName = operatorName;
    this.#keyGroupCount = keyGroupRangeSize(range);
    this.#clock = options.clock ?? Date.now;
    this.#reinterpreted = options.reinterpreted === true;
    this.#changedKeysInMemory = options.settings?.changedKeysInMemory ?? DEFAULT_CHANGED_KEYS_IN_MEMORY;
    const base = options.base;
    this.#store = new LmdbStore(options.dir, options.settings, base === undefined ? undefined : { file: base.file, structures: base.structures });
    this.#fromBase = base !== undefined;
    this.#store.describeKey = (key) => {
      const table = this.#tablesById[key.readUInt16BE(2)];
      return table === undefined ? `a timer of operator "${operatorName}"` : `${table.description} of operator "${operatorName}"`;
    };
    this.#context = new LmdbKeyContext(operatorName, range.start);
    this.#processingTimers = new LmdbTimerService('processing', this.#context, this.#store);
    this.#eventTimers = new LmdbTimerService('event', this.#context, this.#store);
    if (base !== undefined) {
      try {
        openLmdbBase(this.#restoreTarget(), base);
      } catch (error) {
        // Nothing owns this backend yet: its store (with the base's file) goes now.
        this.#store.close().catch(() => {});
        throw error;
      }
    }
  }

  setCurrentKey(key: StateKey): void {
    const context = this.#context;
    if (key === context.currentKey && context.keyGroupIndex >= 0) return;
    const keyGroup = assignToKeyGroup(key, this.maxParallelism);
    const range = this.keyGroupRange;
    if (keyGroup < range.start || keyGroup > range.end) throw keyOutsideRangeError(this.operatorName, key, keyGroup, range, this.#reinterpreted);
    const bytes = this.#keyWriter.reset().value(key, () => `key ${formatKey(key)}`);
    if (bytes.length > MAX_STATE_KEY_BYTES) {
      throw new WeirError(
        'INVALID_KEY',
        `operator "${this.operatorName}": key ${formatKey(key)} is ${bytes.length} bytes long, more than the disk state backend keys by (${MAX_STATE_KEY_BYTES})`,
        {
          hint: 'key by something shorter (an id, or a hash of the long key), or run the job with stateBackend: heap',
        },
      );
    }
    context.currentKey = key;
    context.keyGroup = keyGroup;
    context.keyGroupIndex = keyGroup - range.start;
    context.keyBytes = bytes.copy();
    for (const table of this.#everyRecordCleanup) table.cleanupStep();
  }

  getCurrentKey(): StateKey | undefined {
    return this.#context.currentKey;
  }

  currentKeyGroup(): number {
    return this.#context.keyGroupIndex < 0 ? -1 : this.#context.keyGroup;
  }

  getState<S>(descriptor: StateDescriptor<S>): S {
    const named = descriptor as AnyStateDescriptor;
    const existing = this.#states.get(named.name);
    const table = this.#table(named.name, named.kind, named.ttl !== undefined, existing !== undefined);
    if (existing !== undefined) return existing as S;
    if (table.ttlWrapped !== (named.ttl !== undefined)) {
      throw new WeirError(
        'STATE_TTL_CHANGED',
        `operator "${this.operatorName}" asks for ${named.kind} state "${named.name}" ${named.ttl === undefined ? 'without' : 'with'} a time to live, but the restored checkpoint holds it ${table.ttlWrapped ? 'with' : 'without'} one`,
        { hint: 'turning TTL on or off changes how a state is stored (Flink refuses it too): give the state a new name, or keep its TTL setting' },
      );
    }
    table.ttl = named.ttl;
    // Expired values never come back from a checkpoint.
    if (this.#restored.delete(named.name)) table.purgeExpired();
    if (named.ttl?.incrementalEveryRecord === true) this.#everyRecordCleanup.push(table);
    const state = createLmdbState(named, table);
    this.#states.set(named.name, state);
    return state as S;
  }

  /** The table of state `name`, made on first use (`ttl`: a new table's values are TTL-wrapped). */
  #table(name: string, kind: StateKind, ttl: boolean, registered: boolean): LmdbStateTable {
    let table = this.#tables.get(name);
    if (table === undefined) {
      const id = this.#tablesById.length;
      if (id > MAX_STATE_ID) {
        throw new WeirError('INVALID_STATE_DESCRIPTOR', `operator "${this.operatorName}" uses more than ${MAX_STATE_ID + 1} keyed states`, {
          hint: 'use fewer states per operator (a map state can hold many values per key)',
        });
      }
      table = new LmdbStateTable(name, kind, id, this.#context, this.#store, this.#keyGroupCount, this.#clock);
      table.ttlWrapped = ttl;
      this.#tables.set(name, table);
      this.#tablesById.push(table);
      this.#incremental?.attach(table);
    } else if (table.kind !== kind) {
      throw new WeirError(
        'STATE_KIND_MISMATCH',
        registered
          ? `operator "${this.operatorName}" uses state "${name}" both as ${table.kind} state and as ${kind} state`
          : `operator "${this.operatorName}" asks for ${kind} state "${name}", but the restored checkpoint holds it as ${table.kind} state`,
        { hint: registered ? 'give each state its own name' : 'a state keeps its kind for the life of a job; give the new state a new name' },
      );
    }
    return table;
  }

  stateNames(): string[] {
    return [...this.#tables.keys()];
  }

  *keysOf(stateName: string): Iterable<StateKey> {
    const table = this.#tables.get(stateName);
    if (table !== undefined) yield* table.keys();
  }

  #timers(domain: TimeDomain): LmdbTimerService {
    if (domain === 'processing') return this.#processingTimers;
    if (domain === 'event') return this.#eventTimers;
    throw unknownTimeDomainError(this.operatorName, domain);
  }

  registerTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.#timers(domain).register(timestamp, namespace);
  }

  deleteTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.#timers(domain).delete(timestamp, namespace);
  }

  nextTimerTimestamp(domain: TimeDomain): number | undefined {
    return this.#timers(domain).nextTimestamp();
  }

  numTimers(domain: TimeDomain): number {
    return this.#timers(domain).size;
  }

  pollTimersUpTo(domain: TimeDomain, time: number, onTimer: (key: StateKey, timestamp: number, namespace: string) => void): number {
    const context = this.#context;
    const start = this.keyGroupRange.start;
    return this.#timers(domain).pollUpTo(time, (timer: LmdbTimer) => {
      context.currentKey = timer.key;
      context.keyGroup = timer.keyGroup;
      context.keyGroupIndex = timer.keyGroup - start;
      context.keyBytes = timer.keyBytes;
      onTimer(timer.key, timer.timestamp, timer.namespace);
    });
  }

  /**
   * Whether no key has a value (a checkpoint then writes no keyed state). Asked at every barrier, so
   * it does not wait for the flush thread: a buffered value means not empty; else lmdb as written so
   * far decides (a buffered deletion not yet written may make this say "not empty" of a store about
   * to be: a snapshot of nothing, never state left out).
   */
  isEmpty(): boolean {
    const store = this.#store;
    if (store.state.buffersAValue()) return false;
    for (const _ of store.state.range(FIRST_KEY, LAST_KEY, 1)) return false;
    return true;
  }

  /** A whole snapshot at once (tests, the test driver). */
  snapshot(): Uint8Array {
    const writer = this.snapshotAsync();
    writer.runToEnd();
    return writer.result();
  }

  /**
   * The synchronous part of a snapshot: buffered writes go to lmdb and a read transaction fixes it
   * as it is (O(buffered writes)); the returned writer reads that transaction slice by slice. A
   * snapshot still being written when the next one starts is finished first.
   *
   * `incremental` (incremental checkpoints, as the heap backend's): the barrier's checkpoint id and
   * the completed checkpoint to add to; the writer then reads only the keys changed since
   * (`writer.delta`) from the transaction, or everything when that is not known (the first one,
   * or one long after).
   */
  /** A base can be written beside an incremental chain (KeyedStateChains: FLIP-158's materialization). */
  readonly materializesBeside = true;

  snapshotAsync(incremental?: IncrementalSnapshotRequest): AsyncKeyedStateSnapshot {
    try {
      this.#pendingSnapshot?.runToEnd();
    } catch {
      // That snapshot failed: its own result() says why.
    }
    const states = this.#snapshotStates();
    let delta: DeltaKeys | undefined;
    if (incremental !== undefined) {
      delta = this.#tracker().barrier(incremental.checkpointId, incremental.base, this.#tablesById, [this.#processingTimers, this.#eventTimers]);
      if (delta === undefined) return this.#baseSnapshot(incremental.checkpointId, states);
    }
    const onEnd = () => {
      if (this.#pendingSnapshot === writer) this.#pendingSnapshot = undefined;
    };
    const writer = new LmdbSnapshotWriter(this.#store, states, this.maxParallelism, this.keyGroupRange, this.operatorName, this.#clock(), onEnd, delta);
    this.#pendingSnapshot = writer;
    // A base at the same barrier, written beside the chain (its barrier is the writer's: no write between them).
    if (incremental?.materialize === true && delta !== undefined) {
      try {
        writer.materialization = this.#baseSnapshot(incremental.checkpointId, states);
      } catch (error) {
        writer.release(); // the checkpoint is declined: its read transaction goes now, not at the next barrier
        throw error;
      }
    }
    return writer;
  }

  /** The states as a snapshot takes them at the barrier. */
  #snapshotStates(): SnapshotState[] {
    return this.#tablesById.map((table) => ({
      id: table.id,
      name: table.name,
      kind: table.kind,
      ttlWrapped: table.ttlWrapped,
      ttl: table.ttl?.cleanupFullSnapshot === true ? table.ttl : undefined,
    }));
  }

  /** A full canonical snapshot of key groups `range` (inside this backend's) at once: a base converted for another range or the heap backend. */
  snapshotKeyGroups(range: KeyGroupRange): Uint8Array {
    const writer = new LmdbSnapshotWriter(this.#store, this.#snapshotStates(), this.maxParallelism, range, this.operatorName, this.#clock(), () => {});
    writer.runToEnd();
    return writer.result();
  }

  /** An incremental checkpoint's full snapshot: lmdb's own file, copied off the task thread (LmdbBaseSnapshot). */
  #baseSnapshot(checkpointId: number, states: SnapshotState[]): AsyncKeyedStateSnapshot {
    const snapshot: LmdbBaseSnapshot = new LmdbBaseSnapshot({
      store: this.#store,
      tracker: this.#incremental as IncrementalTracker,
      checkpointId,
      states,
      timerSequences: [this.#processingTimers.sequence, this.#eventTimers.sequence],
      maxParallelism: this.maxParallelism,
      keyGroupRange: this.keyGroupRange,
      operatorName: this.operatorName,
      now: this.#clock(),
      onEnd: () => this.#pendingBases.delete(snapshot),
    });
    this.#pendingBases.add(snapshot);
    const copied = snapshot.copied;
    this.#copies.add(copied);
    void copied.then(() => this.#copies.delete(copied));
    return snapshot;
  }

  /** Checkpoint `checkpointId` was aborted: a base still being written for it is given up (its copy, read transaction and pin go). */
  notifyCheckpointAborted(checkpointId: number): void {
    for (const base of [...this.#pendingBases]) if (base.checkpointId === checkpointId) base.release();
  }

  /** The incremental tracker, made at the first barrier or restore that needs it (its spill beside the state). */
  #tracker(): IncrementalTracker {
    this.#incremental ??= new IncrementalTracker(this.#keyGroupCount, { spill: new LmdbDirtySpill(this.#store), limit: this.#changedKeysInMemory });
    return this.#incremental;
  }

  /** Restored from checkpoint `checkpointId` at the same key groups: changes from now on are tracked as made after it. */
  trackChangesSince(checkpointId: number): void {
    this.#tracker().startAt(checkpointId, this.#tablesById, [this.#processingTimers, this.#eventTimers]);
  }

  /** Checkpoint `checkpointId` completed: incremental snapshots may add to it. */
  notifyCheckpointComplete(checkpointId: number): void {
    this.#incremental?.confirm(checkpointId);
  }

  restore(snapshots: readonly Uint8Array[]): void {
    if (this.#fromBase) {
      // Opened from a base: the snapshots are the checkpoint's changes on it, oldest first.
      applyDeltasToLmdb(this.#restoreTarget(), snapshots);
      this.#processingTimers.reopened(0);
      this.#eventTimers.reopened(0);
      this.#context.currentKey = undefined;
      this.#context.keyGroupIndex = -1;
      return;
    }
    if (!this.isEmpty()) {
      throw new WeirError('RESTORE_INTO_USED_BACKEND', `operator "${this.operatorName}": state can only be restored into an empty backend`, {
        fault: 'internal',
        hint: 'restore state before processing any record',
      });
    }
    restoreIntoLmdb(this.#restoreTarget(), snapshots);
    // A restore leaves the current key unset.
    this.#context.currentKey = undefined;
    this.#context.keyGroupIndex = -1;
  }

  /** What a restore writes into: the store, the tables (a restored state's made and noted for its TTL purge), the timers. */
  #restoreTarget(): LmdbRestoreTarget {
    return {
      maxParallelism: this.maxParallelism,
      keyGroupRange: this.keyGroupRange,
      operatorName: this.operatorName,
      keyGroupCount: this.#keyGroupCount,
      clock: this.#clock,
      store: this.#store,
      existing: this.#tables,
      table: (name, kind, ttl) => {
        const known = this.#tables.has(name);
        const table = this.#table(name, kind, ttl, false);
        if (!known) this.#restored.add(name);
        return table;
      },
      timers: [this.#processingTimers, this.#eventTimers],
    };
  }

  /** Gives up pending snapshots, closes lmdb and deletes the working folder. */
  async dispose(): Promise<void> {
    this.#pendingSnapshot?.release();
    for (const base of [...this.#pendingBases]) base.release();
    // lmdb's copy runs in a thread of libuv's pool on this environment: closing it under the copy would crash the process.
    await Promise.all(this.#copies);
    await this.#store.close();
  }
}
