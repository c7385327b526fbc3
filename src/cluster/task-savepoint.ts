import { basename, dirname, join } from 'node:path';
import type { OperatorSubtaskState } from '../checkpoint/operator-subtask-state.ts';
import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import type { StateHandle } from '../checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { storageFor } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { isS3Url } from '../checkpoint/storage/s3/s3-url.ts';
import type { StateKind } from '../checkpoint/storage/state-file-name.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import type { TaskSavepointPart } from './task-checkpoint.ts';

/**
 * A task's part of a cluster savepoint: the state files of the checkpoint it took at the
 * savepoint's barrier, copied into the savepoint's folder (under `parts/`, one folder per task
 * and attempt, so an attempt that failed before its commit leaves nothing the next one collides
 * with), named as the savepoint's `_metadata` will name them: the task is subtask `task` of its
 * stage's operators, at its stage's task count. The task's own checkpoint files go as usual; the
 * savepoint's are the user's (never deleted by Weir), as one process's are.
 */
export async function writeSavepointPart(options: {
  storage: CheckpointStorage;
  location: CheckpointLocation;
  operators: readonly OperatorSubtaskState[];
  barrier: SavepointBarrier;
  /** The task's checkpoint that is its part. */
  checkpointId: number;
  task: number;
  taskCount: number;
  graph: JobGraph;
  /** The task runs a two-phase-commit sink: its committables in the part are committed after it. */
  committables: boolean;
}): Promise<TaskSavepointPart> {
  const { storage, location, graph } = options;
  // `<stage>-<task>-p<producer>-e<epoch>-c<checkpoint>`: the task's storage root names the first four.
  return copySavepointPart({
    ...options,
    folder: `${basename(dirname(storage.root))}-${basename(storage.root)}-c${options.checkpointId}`,
    read: (handle) => storage.readState(location, handle),
    jobName: graph.jobName,
    maxParallelism: graph.maxParallelism,
    nameOf: (uid) => graph.nodes.find((node) => node.uid === uid)?.name ?? uid,
  });
}

/**
 * Copies a task's state files (`read` reads one) into the savepoint's `parts/<folder>/` and names
 * them as its part: what {@link writeSavepointPart} does for a running task, and
 * `weir savepoint --cluster` for a task that ended before it took its part (its final checkpoint is
 * its part: FLIP-147).
 */
export async function copySavepointPart(options: {
  storage: CheckpointStorage;
  folder: string;
  read: (handle: StateHandle) => Promise<Uint8Array>;
  operators: readonly { uid: string; keyed?: StateHandle | undefined; operator?: StateHandle | undefined }[];
  barrier: SavepointBarrier;
  task: number;
  taskCount: number;
  jobName: string;
  maxParallelism: number;
  nameOf: (uid: string) => string;
  committables: boolean;
}): Promise<TaskSavepointPart> {
  const { barrier, task, folder } = options;
  const target = storageFor(barrier.target, options.storage);
  const partPath = isS3Url(barrier.target) ? `${barrier.target.replace(/\/+$/, '')}/parts/${folder}` : join(barrier.target, 'parts', folder);
  const part: CheckpointLocation = { kind: 'savepoint', checkpointId: barrier.savepoint, path: partPath };
  const copy = async (uid: string, kind: StateKind, handle: StateHandle | undefined): Promise<StateHandle | undefined> => {
    if (handle === undefined) return undefined;
    const written = await target.writeState(part, uid, task, kind, await options.read(handle));
    return { ...written, path: `parts/${folder}/${written.path}` };
  };
  const operators: TaskSavepointPart['operators'] = [];
  for (const { uid, keyed, operator } of options.operators) {
    const keyedCopy = await copy(uid, 'keyed', keyed);
    const operatorCopy = await copy(uid, 'operator', operator);
    operators.push({ uid, name: options.nameOf(uid), ...(keyedCopy ? { keyed: keyedCopy } : {}), ...(operatorCopy ? { operator: operatorCopy } : {}) });
  }
  return {
    id: barrier.savepoint,
    target: barrier.target,
    ...(barrier.stop === undefined ? {} : { stop: barrier.stop }),
    jobName: options.jobName,
    maxParallelism: options.maxParallelism,
    parallelism: options.taskCount,
    operators,
    ...(options.committables ? { committables: true as const } : {}),
  };
}
