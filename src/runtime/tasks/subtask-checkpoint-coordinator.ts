import { channel } from 'node:diagnostics_channel';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CheckpointFailure, CheckpointFailureReason } from '../../checkpoint/checkpoint-failure-reason.ts';
import type { OperatorSubtaskState } from '../../checkpoint/operator-subtask-state.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { StateHandle } from '../../checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { openStateWriter } from '../../checkpoint/storage/open-state-writer.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { OperatorMetricGroup } from '../../core/metrics/metric-group.ts';
import type { AsyncKeyedStateSnapshot } from '../../core/state/keyed-state-backend.ts';
import { SnapshotCompressor } from '../../state/compressed-snapshot.ts';
import type { FromWorker } from '../deployment/worker-messages.ts';
import type { ChannelStateResult } from '../io/checkpointing/checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from '../io/checkpointing/checkpoint-options.ts';
import { isThenable } from './is-thenable.ts';
import { type ChainBase, KeyedStateChains, type Link } from './keyed-state-chains.ts';
import type { OperatorChain, OperatorStateHolder } from './operator-chain.ts';

/** Something of the task that hears of completed and aborted checkpoints (the chain, a source's reader). */
export interface CheckpointListener {
  notifyCheckpointComplete(checkpointId: number): void | Promise<void>;
  notifyCheckpointAborted(checkpointId: number): void | Promise<void>;
}

export interface SubtaskCheckpointCoordinatorOptions {
  chain: OperatorChain;
  /** Every state of the task, in chain order (a source's splits first). */
  stateHolders: () => readonly OperatorStateHolder[];
  /** Hear of completions and aborts, in this order. */
  listeners: () => readonly CheckpointListener[];
  storage: CheckpointStorage | undefined;
  vertexId: number;
  subtaskIndex: number;
  toMaster: (message: FromWorker) => void;
  /** `checkpointing.incremental`: keyed snapshots of checkpoints add to the latest completed one (KeyedStateChains). */
  incremental?: boolean;
  /** `checkpointing.incrementalMaxChanges`: the changes a full snapshot takes before the next is full again. */
  incrementalMaxChanges?: number | undefined;
  /** An operator's metric group (its bases written beside the chain are counted there). */
  metrics?: (uid: string) => OperatorMetricGroup;
}

interface StateSnapshot {
  uid: string;
  /** The keyed state as it was at the barrier, written slice by slice after the barrier went on. */
  keyed: AsyncKeyedStateSnapshot | undefined;
  /** What an incremental keyed snapshot adds to. */
  base: ChainBase | undefined;
  /** A base taken at the same barrier, written beside the chain while the next checkpoints go on. */
  materialization: AsyncKeyedStateSnapshot | undefined;
  operator: Uint8Array | undefined;
}

/**
 * The longest a slice of an asynchronous keyed state snapshot runs on the task thread; the task's
 * loop (its records) runs between slices, as between its own turns (MailboxProcessor MAX_TURN_MS).
 */
const SNAPSHOT_SLICE_MS = 4;

/** Checkpoints aborted ahead of their barrier that a task remembers (Flink's MAX_RECORD_ABORTED_CHECKPOINTS is 128). */
const MAX_ABORTED_AHEAD = 128;

/**
 * Each task's acknowledged checkpoint, with its {@link SubtaskCheckpointDurations}, published on
 * this diagnostics channel of the task's worker thread (nothing is built when no one subscribes):
 * `{ checkpointId, vertexId, subtaskIndex, syncMs, asyncMs, bytes }`. bench/state.ts reads it.
 */
export const SUBTASK_CHECKPOINT_CHANNEL = 'weir:subtask-checkpoint';
const checkpointChannel = channel(SUBTASK_CHECKPOINT_CHANNEL);

/**
 * Each base a task wrote beside its chain (KeyedStateChains), on this diagnostics channel of its
 * worker thread: `{ checkpointId, vertexId, subtaskIndex, uid, ms, bytes }` once written, with
 * `error` (a message) instead of `bytes` when it failed or was given up (a later barrier takes another).
 */
export const SUBTASK_MATERIALIZATION_CHANNEL = 'weir:subtask-materialization';
const materializationChannel = channel(SUBTASK_MATERIALIZATION_CHANNEL);

/** How long each part of a task's checkpoint took (Flink's sync and async durations). */
export interface SubtaskCheckpointDurations {
  /** The task stood still: snapshot hooks and the state backends' synchronous part, up to the barrier going on. */
  syncMs: number;
  /** Records flowed: the keyed state written slice by slice, the files written, up to the acknowledgement. */
  asyncMs: number;
}

/**
 * A task's part of a checkpoint (Flink's SubtaskCheckpointCoordinator). As the barrier passes: the
 * operators' snapshot hooks run (a two-phase-commit sink pre-commits), the state backends take
 * their snapshots (a keyed backend only its synchronous part: copy-on-write marks, O(key groups)),
 * and the barrier goes downstream; then, while records flow again, the keyed state is serialized
 * in slices between the task's turns, the state files are written and the task acknowledges with
 * their handles (an unaligned checkpoint's with its
 * channel state, once complete). A failure of the synchronous part
 * declines the checkpoint with CHECKPOINT_DECLINED, of the writing with CHECKPOINT_ASYNC_EXCEPTION;
 * the barrier goes downstream either way, so nothing waits for it. "Checkpoint N complete" and
 * "aborted" go to the operators (and a source's reader), and the coordinator hears when the task
 * has acted on a completion.
 */
export class SubtaskCheckpointCoordinator {
  readonly #options: SubtaskCheckpointCoordinatorOptions;
  readonly #chains: KeyedStateChains;
  /**
   * Savepoints whose barrier passed this task, not yet complete or aborted. A savepoint is full and
   * no chain's base (the next checkpoint adds to the latest completed checkpoint), so its
   * completion must not tell the keyed backends that its barrier's changes are kept: they would drop
   * the changes the next checkpoint's delta still needs (those after its base, up to the savepoint).
   */
  readonly #savepoints = new Set<number>();
  /** The highest checkpoint whose barrier this task has seen. */
  #lastBarrier = Number.NEGATIVE_INFINITY;
  /**
   * Checkpoints aborted before their barrier reached this task (a barrier late behind back
   * pressure, the checkpoint expired meanwhile): no base is taken beside the chain at their
   * barrier, for it could never be used (Flink's SubtaskCheckpointCoordinatorImpl keeps such ids too).
   */
  readonly #abortedAhead = new Set<number>();

  constructor(options: SubtaskCheckpointCoordinatorOptions) {
    this.#options = options;
    this.#chains = new KeyedStateChains(options.incrementalMaxChanges);
  }

  /**
   * `options`: the barrier's, forwarded with it. `channelState` (an unaligned checkpoint): the
   * records the barrier overtook, complete once it has arrived on every channel; the acknowledgement
   * waits for it and includes its file (none when nothing was in flight), or is not sent when the
   * checkpoint was given up on this task meanwhile (the barrier handler declined it).
   */
  async checkpointState(
    location: CheckpointLocation,
    alignmentMs: number,
    options?: CheckpointOptions,
    channelState?: Promise<ChannelStateResult>,
  ): Promise<void> {
    const { chain, stateHolders } = this.#options;
    const id = location.checkpointId;
    const snapshots: StateSnapshot[] = [];
    const started = performance.now();
    this.#lastBarrier = Math.max(this.#lastBarrier, id);
    const abortedAhead = this.#abortedAhead.delete(id);
    if (location.kind === 'savepoint') this.#savepoints.add(id);
    try {
      await chain.snapshotState(id);
      const incremental = this.#options.incremental === true && location.kind === 'checkpoint';
      for (const holder of stateHolders()) {
        const keyed = holder.keyed === undefined || holder.keyed.isEmpty() ? undefined : holder.keyed;
        const base = incremental ? this.#chains.baseFor(holder.uid, location.incrementalBase, keyed?.materializesBeside === true) : undefined;
        const writer = incremental
          ? keyed?.snapshotAsync({ checkpointId: id, base: base?.checkpointId, materialize: base?.materialize === true && !abortedAhead })
          : keyed?.snapshotAsync();
        snapshots.push({
          uid: holder.uid,
          keyed: writer,
          base,
          materialization: writer?.materialization,
          operator: holder.operatorState.stateNames().length === 0 ? undefined : holder.operatorState.snapshot(),
        });
      }
    } catch (error) {
      for (const snapshot of snapshots) {
        snapshot.keyed?.release();
        snapshot.materialization?.release();
      }
      this.decline(id, 'CHECKPOINT_DECLINED', error);
      chain.broadcastBarrier(location, options);
      return;
    }
    chain.broadcastBarrier(location, options);
    for (const snapshot of snapshots) if (snapshot.materialization !== undefined) this.#materialize(location, snapshot.uid, snapshot.materialization);
    const syncMs = performance.now() - started;
    // The asynchronous part: serialize the keyed state and write the state files while records flow again.
    this.#writeAndAcknowledge(location, snapshots, alignmentMs, channelState, syncMs).catch((error: unknown) => {
      for (const snapshot of snapshots) snapshot.keyed?.release();
      this.decline(id, 'CHECKPOINT_ASYNC_EXCEPTION', error);
    });
  }

  /** Operator `uid`'s keyed state was restored from checkpoint `checkpointId`'s chain `links` at the same key groups: the first snapshot adds to it. */
  restoredChain(uid: string, checkpointId: number, links: readonly Link[]): void {
    this.#chains.restored(uid, checkpointId, links);
  }

  /** Gives up a checkpoint on this task: the coordinator hears why (the barrier handler's aborts). */
  abortCheckpoint(checkpointId: number, failure: CheckpointFailure): void {
    const { vertexId, subtaskIndex, toMaster } = this.#options;
    toMaster({ type: 'decline', checkpointId, vertexId, subtaskIndex, failure });
  }

  decline(checkpointId: number, reason: CheckpointFailureReason, error: unknown): void {
    this.abortCheckpoint(checkpointId, { reason, message: error instanceof Error ? error.message : String(error) });
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    const { vertexId, subtaskIndex, toMaster } = this.#options;
    if (!this.#savepoints.delete(checkpointId)) for (const holder of this.#options.stateHolders()) holder.keyed?.notifyCheckpointComplete?.(checkpointId);
    for (const listener of this.#options.listeners()) {
      const done = listener.notifyCheckpointComplete(checkpointId);
      if (isThenable(done)) await done;
    }
    toMaster({ type: 'notified', checkpointId, vertexId, subtaskIndex });
  }

  async notifyCheckpointAborted(checkpointId: number): Promise<void> {
    if (checkpointId > this.#lastBarrier) {
      this.#abortedAhead.add(checkpointId);
      // Bounded: the oldest goes (its barrier will not come any more once later ones came).
      if (this.#abortedAhead.size > MAX_ABORTED_AHEAD) this.#abortedAhead.delete(Math.min(...this.#abortedAhead));
    }
    this.#chains.aborted(checkpointId);
    this.#savepoints.delete(checkpointId);
    for (const holder of this.#options.stateHolders()) holder.keyed?.notifyCheckpointAborted?.(checkpointId);
    for (const listener of this.#options.listeners()) {
      const done = listener.notifyCheckpointAborted(checkpointId);
      if (isThenable(done)) await done;
    }
  }

  /**
   * Writes a base taken at `location`'s barrier beside the chain, into that checkpoint's folder,
   * while records flow and later checkpoints complete; the chains use it once written. A failure
   * (the checkpoint aborted, the storage) loses nothing: the chain goes on, a later barrier takes another.
   */
  #materialize(location: CheckpointLocation, uid: string, writer: AsyncKeyedStateSnapshot): void {
    const { storage, vertexId, subtaskIndex } = this.#options;
    const checkpointId = location.checkpointId;
    const started = performance.now();
    this.#chains.materializing(uid, checkpointId);
    const publish = (outcome: { bytes: number } | { error: string }) => {
      if (materializationChannel.hasSubscribers) {
        materializationChannel.publish({ checkpointId, vertexId, subtaskIndex, uid, ms: performance.now() - started, ...outcome });
      }
    };
    const metrics = this.#options.metrics?.(uid);
    const written =
      storage === undefined
        ? Promise.reject(new WeirError('NO_CHECKPOINT_STORAGE', 'checkpointing has no storage folder', { fault: 'internal' }))
        : streamKeyedSnapshot(storage, location, uid, subtaskIndex, writer, 'keyed-base');
    written.then(
      (handle) => {
        this.#chains.materialized(uid, checkpointId, handle);
        metrics?.counter('materializationsCompleted').inc();
        metrics?.counter('materializedBytes').inc(handle.size);
        publish({ bytes: handle.size });
      },
      (error: unknown) => {
        writer.release();
        this.#chains.materializationFailed(uid, checkpointId);
        metrics?.counter('materializationsFailed').inc();
        publish({ error: error instanceof Error ? error.message : String(error) });
      },
    );
  }

  async #writeAndAcknowledge(
    location: CheckpointLocation,
    snapshots: StateSnapshot[],
    alignmentMs: number,
    channelState: Promise<ChannelStateResult> | undefined,
    syncMs: number,
  ): Promise<void> {
    const { storage, vertexId, subtaskIndex, toMaster } = this.#options;
    const started = performance.now();
    if (storage === undefined) throw new WeirError('NO_CHECKPOINT_STORAGE', 'checkpointing has no storage folder', { fault: 'internal' });
    const operators: OperatorSubtaskState[] = [];
    let bytes = 0;
    for (const snapshot of snapshots) {
      const state: OperatorSubtaskState = { uid: snapshot.uid };
      const writer = snapshot.keyed;
      if (writer !== undefined) {
        const handle = await streamKeyedSnapshot(storage, location, snapshot.uid, subtaskIndex, writer);
        if (this.#options.incremental === true && location.kind === 'checkpoint') {
          Object.assign(state, this.#chains.written(snapshot.uid, location.checkpointId, handle, writer.delta === undefined ? undefined : snapshot.base));
        } else state.keyed = handle;
        bytes += handle.size;
      }
      if (snapshot.operator !== undefined) {
        state.operator = await storage.writeState(location, snapshot.uid, subtaskIndex, 'operator', snapshot.operator);
        bytes += snapshot.operator.byteLength;
      }
      operators.push(state);
    }
    if (channelState !== undefined) {
      const channels = await channelState;
      if (channels.kind === 'aborted') return; // declined on this task already, or aborted by the coordinator
      if (channels.bytes !== undefined) {
        operators.push({ uid: channels.uid, operator: await storage.writeState(location, channels.uid, subtaskIndex, 'operator', channels.bytes) });
        bytes += channels.bytes.byteLength;
      }
    }
    const asyncMs = performance.now() - started;
    if (checkpointChannel.hasSubscribers) checkpointChannel.publish({ checkpointId: location.checkpointId, vertexId, subtaskIndex, syncMs, asyncMs, bytes });
    toMaster({ type: 'ack', checkpointId: location.checkpointId, vertexId, subtaskIndex, operators, alignmentMs, bytes, syncMs, asyncMs });
  }
}

/**
 * Writes a keyed snapshot into its state file as it is produced (never held whole): a slice of the
 * writer per turn of the event loop (the task's loop takes its turns in between), each slice's
 * pieces handed to the file (which frees them once written) before the next. A failure gives both
 * up: the snapshot (its copy-on-write ends) and the file (deleted).
 */
async function streamKeyedSnapshot(
  storage: CheckpointStorage,
  location: CheckpointLocation,
  uid: string,
  subtaskIndex: number,
  writer: AsyncKeyedStateSnapshot,
  kind: 'keyed' | 'keyed-base' = 'keyed',
): Promise<StateHandle> {
  const file = await openStateWriter(storage, location, uid, subtaskIndex, kind);
  // An incremental checkpoint's changes are written compressed (compressed-snapshot.ts); full snapshots as they are.
  const compressor = writer.delta === undefined ? undefined : new SnapshotCompressor();
  try {
    for (;;) {
      const done = writer.step(SNAPSHOT_SLICE_MS);
      const drained = writer.drain();
      const pieces = compressor === undefined || drained.length === 0 ? drained : await compressor.push(drained);
      if (pieces.length > 0) await file.write(pieces);
      if (done) {
        const last = (await compressor?.finish()) ?? [];
        if (last.length > 0) await file.write(last);
        break;
      }
      const waiting = writer.waiting?.();
      if (waiting === undefined) await nextTurn();
      else await waiting;
    }
    writer.assertComplete();
    return await file.finish();
  } catch (error) {
    writer.release();
    await file.abort();
    throw error;
  }
}
