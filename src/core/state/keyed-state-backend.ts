import type { TimeDomain } from '../time/time-domain.ts';
import type { StateDescriptor } from './state-descriptors.ts';
import type { StateKey } from './state-key.ts';

/**
 * What a keyed operator sees of its keyed state (Flink's KeyedStateBackend with its timer
 * service): state scoped to the current key, and timers per key, time domain and namespace (a
 * window, a join side; '' for a process function's own). The task builds the backend of each keyed
 * operator and snapshots and restores it by key group; an operator only uses this contract, so
 * another backend can take the heap one's place.
 */
export interface KeyedStateBackend {
  /** Makes `key` the current key: state and timers act on it until the next call. */
  setCurrentKey(key: StateKey): void;
  /** The current key, or undefined before the first {@link setCurrentKey}. */
  getCurrentKey(): StateKey | undefined;
  /** The keys that have a value in the state named `stateName` (Flink's getKeys); collect them before changing state. */
  keysOf(stateName: string): Iterable<StateKey>;
  /** The state object `descriptor` names; the same object on every call, acting on the current key. */
  getState<S>(descriptor: StateDescriptor<S>): S;
  /** Registers a timer of the current key; false when it was already there. */
  registerTimer(domain: TimeDomain, timestamp: number, namespace?: string): boolean;
  /** Deletes a timer of the current key; false when there was none. */
  deleteTimer(domain: TimeDomain, timestamp: number, namespace?: string): boolean;
  /** The earliest timer of this time domain, over every key; undefined when there is none. */
  nextTimerTimestamp(domain: TimeDomain): number | undefined;
  /**
   * Removes and hands to `onTimer`, in timestamp order, every timer of `domain` at or before `time`,
   * with its key set as the current key. Returns how many fired.
   */
  pollTimersUpTo(domain: TimeDomain, time: number, onTimer: (key: StateKey, timestamp: number, namespace: string) => void): number;
}

/**
 * A keyed state snapshot being written asynchronously (the heap's KeyedStateSnapshotWriter, the
 * disk backend's LmdbSnapshotWriter): created at the barrier (the synchronous part), then written
 * in slices between the task's turns.
 */
export interface AsyncKeyedStateSnapshot {
  /** Whether the snapshot is written (or given up). */
  readonly done: boolean;
  /** Writes on for about `budgetMs`; returns whether the snapshot is complete. Throws (and gives up) when the state cannot be written. */
  step(budgetMs: number): boolean;
  /** Writes what is left at once (a snapshot that waits on work off the thread, {@link waiting}, cannot: it throws). */
  runToEnd(): void;
  /**
   * While the snapshot waits on work off the task thread (the disk backend's file copy), what to
   * await before the next {@link step} (instead of stepping again at the next turn); undefined otherwise.
   */
  waiting?(): Promise<void> | undefined;
  /** The snapshot (canonical keyed format), once complete, when nothing was drained; the error it failed with, if it failed. */
  result(): Uint8Array;
  /** The snapshot's pieces written since the last call, in order (the caller owns them): a storage writes them as they come. */
  drain(): Uint8Array[];
  /** Throws the error the snapshot failed with, or CHECKPOINT_NOT_COMPLETED when it was given up or is still being written. */
  assertComplete(): void;
  /** Gives the snapshot up. */
  release(): void;
  /** An incremental snapshot: the completed checkpoint it adds to (restored after that one's snapshots); undefined for a full one. */
  readonly delta?: { readonly base: number } | undefined;
  /**
   * A full snapshot taken at the same barrier, asked for with `materialize`: written beside the
   * chain (its own file) while later checkpoints go on adding to the chain.
   */
  readonly materialization?: AsyncKeyedStateSnapshot | undefined;
}

/** Asks a backend for an incremental snapshot: the barrier's checkpoint, and the completed one to add to (undefined: full). */
export interface IncrementalSnapshotRequest {
  checkpointId: number;
  base: number | undefined;
  /** Also take a full snapshot at this barrier, to write beside the chain (a backend with `materializesBeside`). */
  materialize?: boolean;
}

/**
 * What the task does with a keyed backend besides what operators use (Flink's
 * CheckpointableKeyedStateBackend): snapshot it by key group in the canonical format, restore it
 * from such snapshots of any parallelism, and dispose of it when the task ends. Both backends
 * (heap, disk) read and write the same format, so a job moves between them through any
 * checkpoint or savepoint.
 */
export interface CheckpointableKeyedStateBackend extends KeyedStateBackend {
  /** The job's maxParallelism: the number of key groups. */
  readonly maxParallelism: number;
  /** The key groups this subtask owns, inclusive (Flink's KeyGroupRange). */
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  /** Whether an incremental snapshot can also take a base at its barrier, written beside the chain (IncrementalSnapshotRequest.materialize). */
  readonly materializesBeside?: boolean;
  /** The names of all states: registered with getState or brought in by restore. */
  stateNames(): string[];
  /** How many timers `domain` holds. */
  numTimers(domain: TimeDomain): number;
  /** Whether no state holds any key and there are no timers. */
  isEmpty(): boolean;
  /**
   * The synchronous part of a snapshot; the returned snapshot writes the rest in slices. With
   * `incremental`, a backend that can writes only what changed since `incremental.base` (the
   * snapshot's `delta` says so); one that cannot writes a full snapshot.
   */
  snapshotAsync(incremental?: IncrementalSnapshotRequest): AsyncKeyedStateSnapshot;
  /**
   * Restored from checkpoint `checkpointId` at the same key groups, whose chain the task adds to:
   * changes from now on are tracked as made after its barrier (incremental checkpoints).
   */
  trackChangesSince?(checkpointId: number): void;
  /** Checkpoint `checkpointId` completed (an incremental snapshot may add to it). */
  notifyCheckpointComplete?(checkpointId: number): void;
  /** Checkpoint `checkpointId` was aborted: a snapshot still being written for it may be given up. */
  notifyCheckpointAborted?(checkpointId: number): void;
  /** A whole snapshot at once (the test driver, tests). */
  snapshot(): Uint8Array;
  /** Loads the key groups this backend owns from canonical snapshots of any earlier parallelism. */
  restore(snapshots: readonly Uint8Array[]): void;
  /** Frees what the backend holds outside the V8 heap (the disk backend's lmdb and working folder). */
  dispose?(): Promise<void>;
}
