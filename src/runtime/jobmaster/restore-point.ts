import type { CompletedCheckpoint } from '../../checkpoint/completed-checkpoint.ts';
import type { CheckpointStorage, StoredCheckpointMetadata } from '../../checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../checkpoint/storage/completed-checkpoint-store.ts';
import { storageFor } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { channelStateHead } from '../../graph/channel-state-uid.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { RestoreInfo } from '../deployment/restore-info.ts';

/**
 * Where a job starts from (Flink's SavepointRestoreSettings and restore of the latest checkpoint):
 * the savepoint or checkpoint it was told to start from, else the latest completed snapshot of its
 * checkpoint storage (savepoints included), else nothing (`fresh` skips the storage). What it finds
 * must fit the job: the same maxParallelism, and every operator that has state still there by uid.
 */
export async function findRestorePoint(
  graph: JobGraph,
  storage: CheckpointStorage | undefined,
  options: { fromSavepoint?: string | undefined; fresh?: boolean | undefined },
): Promise<RestoreInfo | undefined> {
  let restored: StoredCheckpointMetadata | undefined;
  if (options.fromSavepoint !== undefined) {
    // readMetadata reads the location it is given; it needs no particular storage root.
    restored = await storageFor(options.fromSavepoint, storage).readMetadata(options.fromSavepoint);
  } else if (!options.fresh && storage !== undefined) {
    restored = await new CompletedCheckpointStore(storage).latest();
  }
  if (restored === undefined) return undefined;
  validateRestore(graph, restored);
  // A savepoint is recorded committed before it is reported; a checkpoint once every task acted on
  // its completion, or at the job's end (committed-checkpoint-recorder.ts).
  const committed = await storageFor(restored.location.path, storage).isMarkedCommitted(restored.location.path);
  const info = restoreInfoOf(restored, committed);
  if (options.fromSavepoint !== undefined && storage !== undefined) {
    // A later completed snapshot in the job's storage: completing it committed everything up to it
    // (notifyCheckpointComplete subsumes), this one's transactions included.
    const latest = await new CompletedCheckpointStore(storage).latest().catch(() => undefined);
    if (latest !== undefined && latest.checkpointId > restored.checkpointId) info.supersededBy = latest.checkpointId;
  }
  return info;
}

/** The warning for a restore of an older snapshot than the latest: its output after it is produced again. */
export function supersededRestoreWarning(restore: RestoreInfo): string | undefined {
  if (restore.supersededBy === undefined) return undefined;
  return (
    `warning: restoring checkpoint ${restore.checkpointId}, older than the latest completed one (${restore.supersededBy}): ` +
    `its transactions were committed when the later ones completed (a commit now answered "fenced" is not taken for data loss), and the job re-reads its input from checkpoint ${restore.checkpointId}'s offsets, ` +
    `so every output record written after checkpoint ${restore.checkpointId} up to ${restore.supersededBy} is written again (duplicates for read_committed readers)`
  );
}

/** What a restart restores after a failure: the latest snapshot completed in this job's life. */
export function restoreAfterFailure(latest: CompletedCheckpoint): RestoreInfo {
  return restoreInfoOf({ ...latest.metadata, location: latest.location }, false);
}

function restoreInfoOf(metadata: StoredCheckpointMetadata, transactionsCommitted: boolean): RestoreInfo {
  return {
    transactionsCommitted,
    checkpointId: metadata.checkpointId,
    kind: metadata.kind,
    folder: metadata.location.path,
    maxParallelism: metadata.maxParallelism,
    operators: metadata.operators.map((operator) => ({ uid: operator.uid, parallelism: operator.parallelism, subtasks: operator.subtasks })),
  };
}

function validateRestore(graph: JobGraph, restored: StoredCheckpointMetadata): void {
  const what = `${restored.kind} ${restored.checkpointId} (${restored.location.path})`;
  if (restored.maxParallelism !== graph.maxParallelism) {
    throw new WeirError(
      'MAX_PARALLELISM_CHANGED',
      `${what} was taken with maxParallelism ${restored.maxParallelism}, the job now has ${graph.maxParallelism}`,
      {
        hint: `set maxParallelism back to ${restored.maxParallelism}: it is fixed for the life of a job`,
      },
    );
  }
  const uids = new Set(graph.nodes.map((node) => node.uid));
  for (const operator of restored.operators) {
    const hasState = operator.subtasks.some((subtask) => subtask.keyed !== undefined || subtask.operator !== undefined);
    // Channel state (an unaligned checkpoint's records in flight) belongs to the task its head operator heads.
    const head = channelStateHead(operator.uid);
    if (hasState && head !== undefined && uids.has(head)) continue;
    if (hasState && !uids.has(operator.uid)) {
      throw new WeirError('UNKNOWN_OPERATOR_STATE', `${what} holds state of operator uid "${operator.uid}" (${operator.name}), which the job does not have`, {
        hint: 'give the operator that owns this state the same uid again, or start with --fresh to drop all state',
      });
    }
  }
  refuseRescaledChannelState(graph, restored, what);
}

/**
 * An unaligned checkpoint holds the records that were in flight between tasks, per channel of the
 * parallelism it was taken at; Weir does not redistribute them (Flink does, for some exchanges), so
 * it restores only at that parallelism, every operator's. A savepoint is aligned: rescaling goes
 * through one.
 */
function refuseRescaledChannelState(graph: JobGraph, restored: StoredCheckpointMetadata, what: string): void {
  const withChannelState = restored.operators.filter(
    (operator) => channelStateHead(operator.uid) !== undefined && operator.subtasks.some((subtask) => subtask.operator !== undefined),
  );
  if (withChannelState.length === 0) return;
  const parallelismOf = new Map<string, number>();
  for (const vertex of graph.vertices)
    for (const nodeId of vertex.nodeIds) parallelismOf.set(graph.nodes.find((node) => node.id === nodeId)?.uid ?? '', vertex.parallelism);
  const changed: string[] = [];
  for (const operator of restored.operators) {
    if (channelStateHead(operator.uid) !== undefined) continue;
    const now = parallelismOf.get(operator.uid);
    if (now !== undefined && now !== operator.parallelism) changed.push(`"${operator.name}" ${operator.parallelism} -> ${now}`);
  }
  if (changed.length === 0) return;
  const tasks = withChannelState.map((operator) => operator.name).join(', ');
  throw new WeirError(
    'INVALID_PARALLELISM',
    `${what} is an unaligned checkpoint: it holds records that were in flight between tasks (${tasks}), which restore only at the parallelism it was taken with, and the job's parallelism changed (${changed.join(', ')})`,
    {
      hint: `start the job at its old parallelism (it restores this checkpoint), take a savepoint (\`weir savepoint\`, or \`weir stop --savepoint\`: savepoints are always aligned, they hold no records in flight), then start it at the new parallelism with --from-savepoint <that savepoint>`,
    },
  );
}
