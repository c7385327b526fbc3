import type { SubtaskStateMetadata } from '../../checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';

/** The state of one operator in the checkpoint a job restores from, as workers need it. */
export interface RestoredOperatorState {
  uid: string;
  parallelism: number;
  subtasks: SubtaskStateMetadata[];
}

/** The checkpoint (or savepoint) an attempt restores, as every task of it needs it (Flink's JobManagerTaskRestore). */
export interface RestoreInfo {
  checkpointId: number;
  /** What was restored (undefined where it does not matter: cluster mode's task checkpoints). */
  kind?: 'checkpoint' | 'savepoint' | undefined;
  /** The checkpoint's (or savepoint's) folder; state handles are relative to it. */
  folder: string;
  maxParallelism: number;
  operators: RestoredOperatorState[];
  /**
   * Every transaction it holds is committed, as its `_committed` record says (a savepoint's is
   * written before it is reported, a checkpoint's once every task acted on its completion or the job
   * ended): its committables must not be committed again (their ids may serve newer transactions,
   * or the broker may have forgotten them after transactional.id.expiration.ms).
   */
  transactionsCommitted: boolean;
  /**
   * The id of a later snapshot completed in the job's checkpoint storage, when the job restores an
   * older one (`--from-savepoint <chk-N>`): that completion implies the older one's transactions were
   * committed, and their ids may have been reused since, so a commit answered "fenced" is not data loss.
   */
  supersededBy?: number | undefined;
}

/**
 * Whether `restore` is a checkpoint of `storage` (its folder where the storage puts it): one that
 * incremental checkpoints can go on adding to, since the files its chain names are in sibling
 * folders of that storage. A savepoint, or a checkpoint of another storage, is not.
 */
export function isCheckpointOf(restore: RestoreInfo | undefined, storage: CheckpointStorage | undefined): restore is RestoreInfo {
  return restore?.kind === 'checkpoint' && storage !== undefined && storage.checkpointLocation(restore.checkpointId).path === restore.folder;
}
