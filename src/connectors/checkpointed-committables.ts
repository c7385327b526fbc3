import type { CheckpointStorage, StoredCheckpointMetadata } from '../checkpoint/storage/checkpoint-storage.ts';
import { OperatorStateBackend } from '../state/operator-state-backend.ts';
import { checkCommittableVersion, PENDING_COMMITTABLES_STATE, type PendingCommittable } from './two-phase-commit-sink.ts';

/** A committable a checkpoint holds: pre-committed by a two-phase-commit sink, committed when that checkpoint completed (or by the next start). */
export interface CheckpointedCommittable<C> extends PendingCommittable<C> {
  /** The uid of the sink operator whose state holds it. */
  operatorUid: string;
}

/**
 * Every committable the two-phase-commit sinks of a completed checkpoint hold (their
 * {@link PENDING_COMMITTABLES_STATE}, of all subtasks), read from its operator state files: what a
 * start from it commits again. For tools that act on a stopped job's transactions (`weir doctor`),
 * and tests.
 */
export async function checkpointedCommittables<C>(storage: CheckpointStorage, checkpoint: StoredCheckpointMetadata): Promise<CheckpointedCommittable<C>[]> {
  const found: CheckpointedCommittable<C>[] = [];
  for (const operator of checkpoint.operators) {
    const snapshots: (Uint8Array | undefined)[] = new Array(operator.parallelism).fill(undefined);
    let stateful = false;
    for (const subtask of operator.subtasks) {
      if (subtask.operator === undefined) continue;
      snapshots[subtask.subtaskIndex] = await storage.readState(checkpoint.location.path, subtask.operator);
      stateful = true;
    }
    if (!stateful) continue;
    // Parallelism 1: a union list state gives its one subtask every old subtask's entries.
    const backend = OperatorStateBackend.restoreFor(snapshots, 1, 0);
    if (!backend.stateNames().includes(PENDING_COMMITTABLES_STATE)) continue;
    for (const entry of backend.getUnionListState<PendingCommittable<C>>(PENDING_COMMITTABLES_STATE).get()) {
      checkCommittableVersion(entry, `sink "${operator.name}" (uid "${operator.uid}") of ${checkpoint.location.path}`);
      found.push({ ...entry, operatorUid: operator.uid });
    }
  }
  return found;
}
