import type { CheckpointFailure, CheckpointFailureReason } from '../../checkpoint/checkpoint-failure-reason.ts';
import type { OperatorSubtaskState } from '../../checkpoint/operator-subtask-state.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { FromWorker } from '../deployment/worker-messages.ts';
import type { ChannelStateResult } from '../io/checkpointing/checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from '../io/checkpointing/checkpoint-options.ts';
import { isThenable } from './is-thenable.ts';
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
}

interface StateSnapshot {
  uid: string;
  keyed: Uint8Array | undefined;
  operator: Uint8Array | undefined;
}

/**
 * A task's part of a checkpoint (Flink's SubtaskCheckpointCoordinator). As the barrier passes: the
 * operators' snapshot hooks run (a two-phase-commit sink pre-commits), the state backends take
 * their snapshots, and the barrier goes downstream; then, while records flow again, the state files
 * are written and the task acknowledges with their handles (an unaligned checkpoint's with its
 * channel state, once complete). A failure of the synchronous part
 * declines the checkpoint with CHECKPOINT_DECLINED, of the writing with CHECKPOINT_ASYNC_EXCEPTION;
 * the barrier goes downstream either way, so nothing waits for it. "Checkpoint N complete" and
 * "aborted" go to the operators (and a source's reader), and the coordinator hears when the task
 * has acted on a completion.
 */
export class SubtaskCheckpointCoordinator {
  readonly #options: SubtaskCheckpointCoordinatorOptions;

  constructor(options: SubtaskCheckpointCoordinatorOptions) {
    this.#options = options;
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
    try {
      await chain.snapshotState(id);
      for (const holder of stateHolders()) {
        snapshots.push({
          uid: holder.uid,
          keyed: holder.keyed === undefined || holder.keyed.isEmpty() ? undefined : holder.keyed.snapshot(),
          operator: holder.operatorState.stateNames().length === 0 ? undefined : holder.operatorState.snapshot(),
        });
      }
    } catch (error) {
      this.decline(id, 'CHECKPOINT_DECLINED', error);
      chain.broadcastBarrier(location, options);
      return;
    }
    chain.broadcastBarrier(location, options);
    // The asynchronous part: write the state files while records flow again.
    this.#writeAndAcknowledge(location, snapshots, alignmentMs, channelState).catch((error: unknown) => this.decline(id, 'CHECKPOINT_ASYNC_EXCEPTION', error));
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
    for (const listener of this.#options.listeners()) {
      const done = listener.notifyCheckpointComplete(checkpointId);
      if (isThenable(done)) await done;
    }
    toMaster({ type: 'notified', checkpointId, vertexId, subtaskIndex });
  }

  async notifyCheckpointAborted(checkpointId: number): Promise<void> {
    for (const listener of this.#options.listeners()) {
      const done = listener.notifyCheckpointAborted(checkpointId);
      if (isThenable(done)) await done;
    }
  }

  async #writeAndAcknowledge(
    location: CheckpointLocation,
    snapshots: StateSnapshot[],
    alignmentMs: number,
    channelState: Promise<ChannelStateResult> | undefined,
  ): Promise<void> {
    const { storage, vertexId, subtaskIndex, toMaster } = this.#options;
    if (storage === undefined) throw new WeirError('NO_CHECKPOINT_STORAGE', 'checkpointing has no storage folder', { fault: 'internal' });
    const operators: OperatorSubtaskState[] = [];
    let bytes = 0;
    for (const snapshot of snapshots) {
      const state: OperatorSubtaskState = { uid: snapshot.uid };
      if (snapshot.keyed !== undefined) {
        state.keyed = await storage.writeState(location, snapshot.uid, subtaskIndex, 'keyed', snapshot.keyed);
        bytes += snapshot.keyed.byteLength;
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
    toMaster({ type: 'ack', checkpointId: location.checkpointId, vertexId, subtaskIndex, operators, alignmentMs, bytes });
  }
}
