import { channel } from 'node:diagnostics_channel';
import { join } from 'node:path';
import type { StateHandle, SubtaskStateMetadata } from '../../checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { storageFor } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { readStatePieces } from '../../checkpoint/storage/read-state-pieces.ts';
import { DEFAULT_STATE_DIR } from '../../core/config/default-state-dir.ts';
import type { CheckpointableKeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import { type KeyGroupRange, keyGroupRangeIntersection, keyGroupRangeSize } from '../../state/key-group-range.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../state/key-group-range-assignment.ts';
import { restoreKeyedStateBackend } from '../../state/keyed-state-backend-restore.ts';
import type { LmdbBase } from '../../state/lmdb-base-format.ts';
import { readKeyedFullSnapshot } from '../../state/lmdb-base-reader.ts';
import { releaseRestoreFile, reserveRestoreFile } from '../../state/lmdb-working-folder.ts';
import { OperatorStateBackend } from '../../state/operator-state-backend.ts';
import { isCheckpointOf, type RestoreInfo } from '../deployment/restore-info.ts';

export interface StateInitializerOptions {
  maxParallelism: number;
  parallelism: number;
  subtaskIndex: number;
  restore: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  /** Where keyed state lives (the job's `stateBackend`): 'heap' (default) or 'disk' (lmdb under `stateDir`). */
  stateBackend?: 'heap' | 'disk';
  /** The disk backend's local working folders go under this folder (default: the OS temp folder's weir-state). */
  stateDir?: string;
  /** Names the job's folder under `stateDir`. */
  jobName?: string;
}

/**
 * Each keyed state backend a task restored, on this diagnostics channel of its worker thread:
 * `{ uid, subtaskIndex, stateBackend, readMs, openMs, bytes, files }`: the files read from the checkpoint
 * storage (a base's lmdb file streamed to the working folder), then the backend opened on them (the
 * base's file opened, the changes after it applied). bench/state.ts reads it: the task's restore,
 * as Flink's INITIALIZING to RUNNING is.
 */
export const SUBTASK_RESTORE_CHANNEL = 'weir:subtask-restore';
const restoreChannel = channel(SUBTASK_RESTORE_CHANNEL);

/** A name as one folder name: what is not a letter, digit, `.`, `_` or `-` becomes `_`. */
const folderName = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || '_';

/**
 * Builds the state backends of a task's operators, restored from the checkpoint the attempt starts
 * from (Flink's StreamTaskStateInitializer): keyed state by key group, so a subtask reads only the
 * old subtasks' files whose key-group ranges overlap its own (any parallelism restores any other);
 * operator state redistributed over the new parallelism.
 */
export class StreamTaskStateInitializer {
  readonly #options: StateInitializerOptions;
  readonly #restoredUids: ReadonlySet<string>;

  #restoreStorage: CheckpointStorage | undefined;

  constructor(options: StateInitializerOptions) {
    this.#options = options;
    this.#restoredUids = new Set(options.restore?.operators.map((operator) => operator.uid) ?? []);
  }

  /** The storage that reads the restored checkpoint (the job's, unless the restore names one of another kind). */
  #reader(storage: CheckpointStorage): CheckpointStorage {
    this.#restoreStorage ??= storageFor((this.#options.restore as RestoreInfo).folder, storage);
    return this.#restoreStorage;
  }

  /** Whether the checkpoint the task restores holds this operator (a source then keeps its restored splits). */
  isRestored(uid: string): boolean {
    return this.#restoredUids.has(uid);
  }

  /**
   * The keyed backend of operator `uid`, of the job's `stateBackend` (a disk backend works in
   * `<stateDir>/<job>/<uid>/<subtask>`, emptied first: the state comes from the checkpoint).
   * `reinterpreted`: keyed by reinterpretAsKeyedStream, so a key outside the range breaks the
   * user's partitioning contract.
   */
  async keyedStateBackend(uid: string, operatorName: string, reinterpreted = false): Promise<CheckpointableKeyedStateBackend> {
    const { maxParallelism, parallelism, subtaskIndex, restore, storage } = this.#options;
    const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtaskIndex);
    const dir = this.#stateDir(uid);
    const spec = { stateBackend: this.#options.stateBackend ?? 'heap', maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir } as const;
    // Each old subtask's chain whose key groups overlap this subtask's: its full snapshot, then the changes on it (incremental checkpoints).
    const chains: (Uint8Array | LmdbBase)[][] = [];
    const overlapping = storage === undefined ? [] : this.#overlapping(uid, range).map(({ subtask }) => subtask);
    let streamed: string | undefined;
    const started = performance.now();
    let bytes = 0;
    try {
      for (const subtask of overlapping) {
        const reader = this.#reader(storage as CheckpointStorage);
        const folder = (restore as RestoreInfo).folder;
        const keyed = subtask.keyed as StateHandle;
        let full: Uint8Array | LmdbBase;
        if (spec.stateBackend === 'disk' && overlapping.length === 1) {
          // A disk backend at one old subtask's key groups: a base's lmdb file streams into the working folder, never held whole.
          const source = `the keyed state of operator "${operatorName}" (${keyed.path})`;
          const read = await readKeyedFullSnapshot(readStatePieces(reader, folder, keyed), source, (header) => {
            const same = header.maxParallelism === maxParallelism && header.keyGroupRange.start === range.start && header.keyGroupRange.end === range.end;
            if (same) streamed = reserveRestoreFile(dir);
            return same ? streamed : undefined;
          });
          full = 'bytes' in read ? read.bytes : read.base;
        } else full = await reader.readState(folder, keyed);
        const chain = [full];
        for (const changes of subtask.keyedChanges ?? []) chain.push(await reader.readState(folder, changes));
        chains.push(chain);
        bytes += keyed.size + (subtask.keyedChanges ?? []).reduce((sum, changes) => sum + changes.size, 0);
      }
      const read = performance.now();
      const backend = await restoreKeyedStateBackend(spec, chains);
      if (overlapping.length > 0 && restoreChannel.hasSubscribers) {
        const { subtaskIndex } = this.#options;
        restoreChannel.publish({
          uid,
          subtaskIndex,
          stateBackend: spec.stateBackend,
          readMs: read - started,
          openMs: performance.now() - read,
          bytes,
          files: chains.flat().length,
        });
      }
      return backend;
    } finally {
      // Moved into the store when it opened; deleted when the restore failed before.
      if (streamed !== undefined) releaseRestoreFile(streamed);
    }
  }

  /**
   * The chain operator `uid`'s keyed state was restored from, when the next checkpoint can add to
   * it: a checkpoint of this job's storage (its folders are the siblings the chain's handles name),
   * one old subtask at exactly this subtask's key groups. Each link names the checkpoint whose
   * folder holds its file. Undefined otherwise (a savepoint, a rescale, another storage): the first
   * checkpoint is then full.
   */
  restoredChain(uid: string): { checkpointId: number; links: { checkpointId: number; handle: StateHandle }[] } | undefined {
    const { maxParallelism, parallelism, subtaskIndex, restore, storage } = this.#options;
    if (!isCheckpointOf(restore, storage) || restore.maxParallelism !== maxParallelism) return undefined;
    const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtaskIndex);
    const overlapping = this.#overlapping(uid, range);
    const only = overlapping.length === 1 ? overlapping[0] : undefined;
    if (only === undefined || only.range.start !== range.start || only.range.end !== range.end) return undefined;
    const { keyed, keyedChanges } = only.subtask;
    const links = [keyed as StateHandle, ...(keyedChanges ?? [])].map(({ checkpoint, ...handle }) => ({
      checkpointId: checkpoint ?? restore.checkpointId,
      handle,
    }));
    return { checkpointId: restore.checkpointId, links };
  }

  /** The restored subtasks of operator `uid` with keyed state whose key groups overlap `range`, and their key groups. */
  #overlapping(uid: string, range: KeyGroupRange): { subtask: SubtaskStateMetadata; range: KeyGroupRange }[] {
    const { restore } = this.#options;
    const restored = restore?.operators.find((operator) => operator.uid === uid);
    if (restore === undefined || restored === undefined) return [];
    return restored.subtasks.flatMap((subtask) => {
      if (subtask.keyed === undefined) return [];
      const oldRange = computeKeyGroupRangeForOperatorIndex(restore.maxParallelism, restored.parallelism, subtask.subtaskIndex);
      return keyGroupRangeSize(keyGroupRangeIntersection(oldRange, range)) > 0 ? [{ subtask, range: oldRange }] : [];
    });
  }

  /** The local working folder of the disk backend of operator `uid`: `<stateDir>/<job>/<uid>/<subtask>`. */
  #stateDir(uid: string): string {
    const { subtaskIndex, stateDir, jobName } = this.#options;
    return join(stateDir ?? DEFAULT_STATE_DIR, folderName(jobName ?? 'job'), folderName(uid), String(subtaskIndex));
  }

  /**
   * The channel state file of this subtask stored under `uid` in the restored checkpoint (an
   * unaligned one's records in flight), or undefined. It is read only at the parallelism it was
   * taken with (the restore refuses a rescale), so the subtask reads its own.
   */
  async channelState(uid: string): Promise<Uint8Array | undefined> {
    const { subtaskIndex, restore, storage } = this.#options;
    const restored = restore?.operators.find((operator) => operator.uid === uid);
    if (restore === undefined || restored === undefined || storage === undefined) return undefined;
    const handle = restored.subtasks.find((subtask) => subtask.subtaskIndex === subtaskIndex)?.operator;
    return handle === undefined ? undefined : this.#reader(storage).readState(restore.folder, handle);
  }

  async operatorStateBackend(uid: string): Promise<OperatorStateBackend> {
    const { parallelism, subtaskIndex, restore, storage } = this.#options;
    const restored = restore?.operators.find((operator) => operator.uid === uid);
    if (restore === undefined || restored === undefined || storage === undefined) return new OperatorStateBackend();
    // One entry per old subtask, in subtask order, so a restore at the same parallelism gives each
    // subtask its own lists back even when another old subtask wrote no operator state.
    const snapshots: (Uint8Array | undefined)[] = new Array(restored.parallelism).fill(undefined);
    for (const subtask of restored.subtasks) {
      if (subtask.operator !== undefined) snapshots[subtask.subtaskIndex] = await this.#reader(storage).readState(restore.folder, subtask.operator);
    }
    return OperatorStateBackend.restoreFor(snapshots, parallelism, subtaskIndex);
  }
}
