import { WeirError } from '../core/errors/weir-error.ts';
import type { KeyedStateBackend } from '../core/state/keyed-state-backend.ts';
import {
  type AggregatingStateDescriptor,
  type AnyStateDescriptor,
  checkFunction,
  type StateDescriptor,
  type StateTtl,
} from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../core/state/state-types.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import { HeapAggregatingState } from './heap-aggregating-state.ts';
import { HeapListState } from './heap-list-state.ts';
import { HeapMapState } from './heap-map-state.ts';
import { HeapReducingState } from './heap-reducing-state.ts';
import { TtlAggregatingState, TtlListState, TtlMapState, TtlReducingState, TtlValueState } from './heap-ttl-states.ts';
import { HeapValueState } from './heap-value-state.ts';
import { type DeltaKeys, IncrementalTracker } from './incremental-tracker.ts';
import { InternalKeyContext } from './internal-key-context.ts';
import { InternalTimerService, VOID_NAMESPACE } from './internal-timer-service.ts';
import { type KeyGroupRange, keyGroupRange, keyGroupRangeSize } from './key-group-range.ts';
import { assignToKeyGroup } from './key-group-range-assignment.ts';
import { checkKeyedBackendOptions, keyOutsideRangeError, unknownTimeDomainError } from './keyed-backend-checks.ts';
import { type KeyedStateContents, restoreKeyedStateSnapshots } from './keyed-state-snapshot.ts';
import { KeyedStateSnapshotWriter } from './keyed-state-snapshot-writer.ts';
import { StateTable } from './state-table.ts';

export interface HeapKeyedStateBackendOptions {
  /** The job's maxParallelism: the number of key groups. */
  maxParallelism: number;
  /** The key groups this subtask owns. */
  keyGroupRange: KeyGroupRange;
  /** Names the operator in errors. */
  operatorName: string;
  /** The processing time state TTLs use (default the clock; a test driver's own). */
  clock?: () => number;
  /** Keyed by reinterpretAsKeyedStream: a key of another subtask's key groups is the user's partitioning, not Weir's routing. */
  reinterpreted?: boolean;
}

/** Any keyed state object (element types erased). */
export type KeyedState = ValueState<unknown> | ListState<unknown> | MapState<unknown, unknown> | ReducingState<unknown> | AggregatingState<unknown, unknown>;

/**
 * Keyed state and timers of one subtask, held as JavaScript values in memory (Flink's
 * `HeapKeyedStateBackend` plus its `InternalTimerService`s).
 *
 * The runtime calls {@link setCurrentKey} before each record or timer; state objects from
 * {@link getState} then read and write that key's data. Data is kept per key group so that
 * {@link snapshot} (or, asynchronously, {@link snapshotAsync}) writes it per key group and
 * {@link restore} takes only the key groups this subtask owns, from snapshots of any earlier
 * parallelism (with the same maxParallelism).
 *
 * State values must be structured-cloneable: snapshots write them with `node:v8` serialize.
 *
 * The snapshot format is in keyed-state-snapshot.ts.
 */
export class HeapKeyedStateBackend implements KeyedStateBackend {
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly operatorName: string;
  readonly #context: InternalKeyContext;
  readonly #keyGroupCount: number;
  readonly #tables = new Map<string, StateTable>();
  readonly #states = new Map<string, KeyedState>();
  readonly #processingTimers: InternalTimerService;
  readonly #eventTimers: InternalTimerService;
  readonly #clock: () => number;
  readonly #reinterpreted: boolean;
  /** TTL tables whose incremental cleanup runs on every key change too (everyRecord). */
  readonly #everyRecordCleanup: StateTable[] = [];
  /** The asynchronous snapshot being written, if any. */
  #pendingSnapshot: KeyedStateSnapshotWriter | undefined;
  /** Which keys changed between barriers, once an incremental snapshot was asked for. */
  #incremental: IncrementalTracker | undefined;

  constructor(options: HeapKeyedStateBackendOptions) {
    const { maxParallelism, keyGroupRange: range, operatorName } = options;
    checkKeyedBackendOptions(maxParallelism, range, operatorName);
    this.maxParallelism = maxParallelism;
    this.keyGroupRange = keyGroupRange(range.start, range.end);
    this.operatorName = operatorName;
    this.#keyGroupCount = keyGroupRangeSize(range);
    this.#clock = options.clock ?? Date.now;
    this.#reinterpreted = options.reinterpreted === true;
    this.#context = new InternalKeyContext(operatorName, range.start);
    this.#processingTimers = new InternalTimerService('processing', this.#context, this.#keyGroupCount);
    this.#eventTimers = new InternalTimerService('event', this.#context, this.#keyGroupCount);
  }

  /**
   * Makes `key` the current key (hashing it once). The key must belong to this subtask's key
   * groups; a key outside them was routed to the wrong subtask, an internal error.
   */
  setCurrentKey(key: StateKey): void {
    const context = this.#context;
    if (key === context.currentKey && context.keyGroupIndex >= 0) return;
    const keyGroup = assignToKeyGroup(key, this.maxParallelism);
    const range = this.keyGroupRange;
    if (keyGroup < range.start || keyGroup > range.end) throw keyOutsideRangeError(this.operatorName, key, keyGroup, range, this.#reinterpreted);
    context.currentKey = key;
    context.keyGroupIndex = keyGroup - range.start;
    for (const table of this.#everyRecordCleanup) table.cleanupStep();
  }

  /** The current key, or undefined before the first {@link setCurrentKey}. */
  getCurrentKey(): StateKey | undefined {
    return this.#context.currentKey;
  }

  /** The current key's key group, or -1 when no key is set. */
  currentKeyGroup(): number {
    const index = this.#context.keyGroupIndex;
    return index < 0 ? -1 : index + this.keyGroupRange.start;
  }

  /**
   * The state object for `descriptor`, created on first call and the same object afterwards (it
   * acts on whatever the current key is). A name used with two kinds is the user's error.
   */
  getState<S>(descriptor: StateDescriptor<S>): S {
    return this.#getKeyedState(descriptor as AnyStateDescriptor) as S;
  }

  #getKeyedState(descriptor: AnyStateDescriptor): KeyedState {
    const existing = this.#states.get(descriptor.name);
    if (existing !== undefined) {
      const table = this.#tables.get(descriptor.name)!;
      if (table.kind !== descriptor.kind) {
        throw new WeirError(
          'STATE_KIND_MISMATCH',
          `operator "${this.operatorName}" uses state "${descriptor.name}" both as ${table.kind} state and as ${descriptor.kind} state`,
          { hint: 'give each state its own name' },
        );
      }
      return existing;
    }
    let table = this.#tables.get(descriptor.name);
    if (table === undefined) {
      table = new StateTable(descriptor.name, descriptor.kind, this.#context, this.#keyGroupCount, this.#clock);
      table.ttlWrapped = descriptor.ttl !== undefined;
      this.#tables.set(descriptor.name, table);
      this.#incremental?.attach(table);
    } else if (table.kind !== descriptor.kind) {
      throw new WeirError(
        'STATE_KIND_MISMATCH',
        `operator "${this.operatorName}" asks for ${descriptor.kind} state "${descriptor.name}", but the restored checkpoint holds it as ${table.kind} state`,
        { hint: 'a state keeps its kind for the life of a job; give the new state a new name' },
      );
    }
    if (table.ttlWrapped !== (descriptor.ttl !== undefined)) {
      throw new WeirError(
        'STATE_TTL_CHANGED',
        `operator "${this.operatorName}" asks for ${descriptor.kind} state "${descriptor.name}" ${descriptor.ttl === undefined ? 'without' : 'with'} a time to live, but the restored checkpoint holds it ${table.ttlWrapped ? 'with' : 'without'} one`,
        { hint: 'turning TTL on or off changes how a state is stored (Flink refuses it too): give the state a new name, or keep its TTL setting' },
      );
    }
    table.ttl = descriptor.ttl;
    // Expired values never come back from a checkpoint.
    table.purgeExpired();
    if (descriptor.ttl?.incrementalEveryRecord === true) this.#everyRecordCleanup.push(table);
    const state = createState(descriptor, table);
    this.#states.set(descriptor.name, state);
    return state;
  }

  /** The names of all states: registered with getState or brought in by restore. */
  stateNames(): string[] {
    return [...this.#tables.keys()];
  }

  /**
   * The keys that have a value in state `stateName`, key group by key group (empty for an unknown
   * name). A live view: collect the keys first to change state while iterating.
   */
  *keysOf(stateName: string): Iterable<StateKey> {
    const table = this.#tables.get(stateName);
    if (table === undefined) return;
    for (const group of table.groups) if (group !== undefined) yield* group.keys();
  }

  #timers(domain: TimeDomain): InternalTimerService {
    if (domain === 'processing') return this.#processingTimers;
    if (domain === 'event') return this.#eventTimers;
    throw unknownTimeDomainError(this.operatorName, domain);
  }

  /**
   * Registers a timer for the current key at `timestamp` in `namespace` (default: the void
   * namespace of a process function's own timers); registering it again does nothing. Returns
   * whether it was new.
   */
  registerTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.#timers(domain).register(timestamp, namespace);
  }

  /** Deletes the current key's timer at `timestamp` in `namespace`, if any. Returns whether there was one. */
  deleteTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.#timers(domain).delete(timestamp, namespace);
  }

  /** The earliest timer's timestamp in `domain`, or undefined when there is none. */
  nextTimerTimestamp(domain: TimeDomain): number | undefined {
    return this.#timers(domain).nextTimestamp();
  }

  /** How many timers `domain` holds. */
  numTimers(domain: TimeDomain): number {
    return this.#timers(domain).size;
  }

  /**
   * Fires every timer of `domain` with a timestamp at most `time`, earliest first (one timestamp:
   * registration order), making its key the current key before calling `onTimer`. Timers that
   * `onTimer` registers at or before `time` fire in the same call. The current key is left at the
   * last timer's key. Returns how many fired.
   */
  pollTimersUpTo(domain: TimeDomain, time: number, onTimer: (key: StateKey, timestamp: number, namespace: string) => void): number {
    const timers = this.#timers(domain);
    const context = this.#context;
    let fired = 0;
    for (let timer = timers.pollUpTo(time); timer !== undefined; timer = timers.pollUpTo(time)) {
      context.currentKey = timer.key;
      context.keyGroupIndex = timer.keyGroupIndex;
      fired++;
      onTimer(timer.key, timer.timestamp, timer.namespace);
    }
    return fired;
  }

  /** Whether no state holds any key and there are no timers. */
  isEmpty(): boolean {
    for (const table of this.#tables.values()) if (!table.isEmpty()) return false;
    return this.#processingTimers.isEmpty() && this.#eventTimers.isEmpty();
  }

  /** Writes all state and timers, per key group, at once (the format is in keyed-state-snapshot.ts). */
  snapshot(): Uint8Array {
    const writer = this.snapshotAsync();
    writer.runToEnd();
    return writer.result();
  }

  /**
   * The synchronous part of an asynchronous snapshot (Flink's heap snapshot strategy with a
   * copy-on-write state table): O(states x key groups), it marks the state as it is now as what
   * the returned writer writes, slice by slice ({@link KeyedStateSnapshotWriter.step}), while the
   * state goes on changing. A snapshot still being written when the next one starts is finished
   * first. With fullSnapshot TTL cleanup, values expired now are left out.
   *
   * `incremental` (incremental checkpoints): the barrier's checkpoint id, and the completed
   * checkpoint to add to; the writer then holds only what changed since (`writer.delta`), or
   * everything when that is not known (the first one, or one long after).
   */
  snapshotAsync(incremental?: { checkpointId: number; base: number | undefined }): KeyedStateSnapshotWriter {
    try {
      this.#pendingSnapshot?.runToEnd();
    } catch {
      // That snapshot failed: its own result() reports why (a checkpoint's asynchronous part).
    }
    let delta: DeltaKeys | undefined;
    if (incremental !== undefined) {
      this.#incremental ??= new IncrementalTracker(this.#keyGroupCount);
      delta = this.#incremental.barrier(incremental.checkpointId, incremental.base, this.#tables.values(), [this.#processingTimers, this.#eventTimers]);
    }
    const writer = new KeyedStateSnapshotWriter(
      this.#contents(),
      () => {
        if (this.#pendingSnapshot === writer) this.#pendingSnapshot = undefined;
      },
      delta,
    );
    this.#pendingSnapshot = writer;
    return writer;
  }

  /** Restored from checkpoint `checkpointId` at the same key groups: changes from now on are tracked as made after it. */
  trackChangesSince(checkpointId: number): void {
    this.#incremental ??= new IncrementalTracker(this.#keyGroupCount);
    this.#incremental.startAt(checkpointId, this.#tables.values(), [this.#processingTimers, this.#eventTimers]);
  }

  /** Checkpoint `checkpointId` completed: incremental snapshots may add to it. */
  notifyCheckpointComplete(checkpointId: number): void {
    this.#incremental?.confirm(checkpointId);
  }

  /**
   * Loads the key groups this backend owns from snapshots of any earlier parallelism (one per old
   * subtask, in any order) taken with the same maxParallelism. Must be called on an empty backend.
   */
  restore(snapshots: readonly Uint8Array[]): void {
    if (!this.isEmpty()) {
      throw new WeirError('RESTORE_INTO_USED_BACKEND', `operator "${this.operatorName}": state can only be restored into an empty backend`, {
        fault: 'internal',
        hint: 'restore state before processing any record',
      });
    }
    restoreKeyedStateSnapshots(this.#contents(), snapshots);
  }

  /** What the snapshot format reads and writes of this backend. */
  #contents(): KeyedStateContents {
    return {
      maxParallelism: this.maxParallelism,
      keyGroupRange: this.keyGroupRange,
      operatorName: this.operatorName,
      keyGroupCount: this.#keyGroupCount,
      tables: this.#tables,
      timers: [this.#processingTimers, this.#eventTimers],
      context: this.#context,
      clock: this.#clock,
    };
  }
}

function createState(descriptor: AnyStateDescriptor, table: StateTable): KeyedState {
  const ttl = descriptor.ttl;
  if (ttl !== undefined) return createTtlState(descriptor, table, ttl);
  switch (descriptor.kind) {
    case 'value':
      return new HeapValueState(table, descriptor.defaultValue);
    case 'list':
      return new HeapListState(table);
    case 'map':
      return new HeapMapState(table);
    case 'reducing':
      checkFunction(descriptor.reduce, 'reduce', descriptor.name, descriptor.kind);
      return new HeapReducingState(table, descriptor.reduce);
    case 'aggregating':
      checkFunction(descriptor.createAccumulator, 'createAccumulator', descriptor.name, descriptor.kind);
      checkFunction(descriptor.add, 'add', descriptor.name, descriptor.kind);
      checkFunction(descriptor.getResult, 'getResult', descriptor.name, descriptor.kind);
      return new HeapAggregatingState(table, descriptor);
    default:
      throw new WeirError(
        'INVALID_STATE_DESCRIPTOR',
        `state "${(descriptor as AnyStateDescriptor).name}" has unknown kind ${JSON.stringify((descriptor as AnyStateDescriptor).kind)}`,
        {
          hint: 'build descriptors with valueState, listState, mapState, reducingState or aggregatingState',
        },
      );
  }
}

function createTtlState(descriptor: AnyStateDescriptor, table: StateTable, ttl: StateTtl): KeyedState {
  switch (descriptor.kind) {
    case 'value':
      return new TtlValueState(table, ttl, descriptor.defaultValue);
    case 'list':
      return new TtlListState(table, ttl);
    case 'map':
      return new TtlMapState(table, ttl);
    case 'reducing':
      checkFunction(descriptor.reduce, 'reduce', descriptor.name, descriptor.kind);
      return new TtlReducingState(table, ttl, descriptor.reduce);
    default:
      checkFunction(descriptor.createAccumulator, 'createAccumulator', descriptor.name, descriptor.kind);
      checkFunction(descriptor.add, 'add', descriptor.name, descriptor.kind);
      checkFunction(descriptor.getResult, 'getResult', descriptor.name, descriptor.kind);
      return new TtlAggregatingState(table, ttl, descriptor as AggregatingStateDescriptor<unknown, unknown, unknown>);
  }
}
