import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@platformatic/kafka';
import type { CheckpointMetadata, OperatorStateMetadata } from '../checkpoint/storage/checkpoint-metadata.ts';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { openCheckpointStorage, storageFor } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { describeGroupsV5 } from '../connectors/kafka/kafka-protocol.ts';
import { readTopic } from '../connectors/kafka/topic-reader.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import { withGroupCoordinator } from './find-group-coordinator.ts';
import { decodeMemberMetadata } from './member-protocol.ts';
import { appendControl, ControlState, controlTopicName, decodeControl, ensureControlTopic } from './savepoint-control.ts';
import { clusterTopicName } from './stage-plan.ts';
import { latestTaskCheckpoints, type TaskCheckpoint, type TaskSavepointPart } from './task-checkpoint.ts';
import { copySavepointPart } from './task-savepoint.ts';

/** How long a savepoint's first read of the tasks' records waits for the transactions open at its start. */
const OPEN_TRANSACTIONS_WAIT_MS = 3_000;

export interface ClusterSavepointOptions {
  cluster: string;
  /** The cluster's --checkpoint-storage: the savepoint goes to its `savepoints/` folder; undefined: the one its tasks' checkpoints name. */
  storage: string | undefined;
  bootstrap: readonly BrokerAddress[];
  connection: ConnectionOptions;
  stop: 'suspend' | 'drain' | undefined;
  timeoutMs: number;
  log: (line: string) => void;
}

/**
 * `weir savepoint --cluster` and `weir stop --cluster`: one savepoint across every task of a
 * running cluster, in the canonical format of one process's (`_metadata`, one state file per
 * operator and subtask), so `weir run --from-savepoint` restores it in one process at any
 * parallelism. It asks through the control topic (savepoint-control.ts); the source tasks take
 * their part at their next checkpoint, and their barrier frames carry it through the exchanges,
 * each downstream task aligning on them (savepoint-alignment.ts); every part is committed with
 * its task's output. Once every task's checkpoint record names its part, the `_metadata` is
 * written (a task is subtask `task` of its stage's operators, at its stage's task count), then
 * `_committed` (every part's transaction is committed), then `done`. A stop then waits for the
 * members to leave.
 */
export async function takeClusterSavepoint(options: ClusterSavepointOptions): Promise<{ id: number; path: string }> {
  const { cluster, bootstrap, connection } = options;
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-savepoint', ...connection, owner: `cluster "${cluster}"` });
  try {
    // A group in the middle of a rebalance may not show its members' metadata yet: asked again for a while.
    let tasks = await taskNames(connections, cluster);
    for (let attempt = 0; tasks.length === 0 && attempt < 10; attempt++) {
      await sleep(1000);
      tasks = await taskNames(connections, cluster);
    }
    if (tasks.length === 0) {
      throw new WeirError('SAVEPOINT_FAILED', `no member of cluster "${cluster}" is running: a savepoint is taken by its running tasks`, {
        hint: `start the cluster (weir run <job> --cluster ${cluster}), or check the id with weir cluster status ${cluster}`,
      });
    }
    await ensureControlTopic(connections, bootstrap, connection, cluster);
    const control = new ControlState();
    for (const record of await readTopic({ bootstrap, connection, topic: controlTopicName(cluster), isolation: 'read_uncommitted' }))
      control.add(decodeControl(record), record.offset);
    const checkpointTopic = clusterTopicName(cluster, 'checkpoints');
    // What is committed now (up to the last stable offset): a member's open transaction (a paused member's, say) holds no poll back.
    const parts = async (until: 'high-watermark' | 'last-stable-offset' = 'last-stable-offset', timeoutMs = 60_000) =>
      latestTaskCheckpoints(await readTopic({ bootstrap, connection, topic: checkpointTopic, timeoutMs, until }), checkpointTopic);
    // The first read waits a little for the transactions open now: a task's final record committed
    // just before (its commit markers not written yet, or behind another task's open transaction)
    // is seen, and the request is refused before it is appended. A member's open transaction that
    // stays (a paused member) holds it no longer than that: then what is committed is read.
    const current = await parts('high-watermark', OPEN_TRANSACTIONS_WAIT_MS).catch((error: unknown) => {
      if (error instanceof WeirError && error.code === 'READ_TIMEOUT') return parts();
      throw error;
    });
    // Bounded input: a task that ended runs no more; its final checkpoint is its part (Flink's
    // FLIP-147), and the tasks behind it count its end frame as its barrier (savepoint-alignment.ts).
    const endedBefore = tasks.filter((name) => current.get(name)?.ended === true);
    if (endedBefore.length === tasks.length) throw endedTasksRefusal(cluster, tasks.length);
    const latest = [...current.values()];
    const before = Math.max(0, ...latest.map((checkpoint) => checkpoint.savepoint?.id ?? 0));
    const id = Math.max(control.latestId, before) + 1;
    const storage = openCheckpointStorage(options.storage ?? storageOfTasks(cluster, latest));
    await storage.initialize();
    const location = storage.savepointLocation(id);
    await appendControl(connections, cluster, { kind: 'request', id, target: location.path, ...(options.stop === undefined ? {} : { stop: options.stop }) });
    options.log(`savepoint ${id} of cluster "${cluster}" asked of its ${tasks.length} tasks: ${location.path}`);
    if (endedBefore.length > 0) options.log(`${endedBefore.length} of them ended (bounded input): their final checkpoints are their parts`);
    const deadline = Date.now() + options.timeoutMs;
    let checkpoints = current;
    let missing: string[] = tasks;
    while (missing.length > 0) {
      if (Date.now() > deadline) {
        await appendControl(connections, cluster, { kind: 'aborted', id }).catch(() => {});
        throw new WeirError(
          'SAVEPOINT_FAILED',
          `savepoint ${id} of cluster "${cluster}" was not done in ${options.timeoutMs / 1000} s: ${missing.length} of ${tasks.length} tasks have not committed their part (${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''})`,
          {
            hint: `see weir cluster status ${cluster} (a task that does not checkpoint, or a member down); a longer --timeout, or try again`,
            fault: 'external',
          },
        );
      }
      await sleep(500);
      checkpoints = await parts();
      // A task whose input ended meanwhile without its part (its final checkpoint came first) never takes one: that checkpoint is its part.
      missing = tasks.filter((name) => checkpoints.get(name)?.savepoint?.id !== id && checkpoints.get(name)?.ended !== true);
    }
    const barrier = { savepoint: id, target: location.path, stop: options.stop };
    const done = await savepointParts(storage, cluster, tasks, checkpoints, barrier).catch(async (error: unknown) => {
      await appendControl(connections, cluster, { kind: 'aborted', id }).catch(() => {});
      throw error;
    });
    await storage.commitMetadata(location, savepointMetadata(cluster, id, tasks, done));
    // A savepoint is marked committed once everything it holds is (one process marks it after its
    // commits): a two-phase-commit sink's part is committed after its transaction, so a savepoint
    // with one is not, and a restore from it commits what it holds again (a commit is idempotent).
    if (!done.some((part) => part.committables === true)) await storage.markCommitted(location);
    await appendControl(connections, cluster, { kind: 'done', id });
    if (options.stop !== undefined) await membersGone(connections, cluster, deadline);
    return { id, path: location.path };
  } finally {
    await connections.close();
  }
}

/**
 * A savepoint of a cluster every one of whose tasks has ended (bounded input) is refused, at once:
 * nothing runs to take it, and its output is complete. (Some tasks ended: their final checkpoints
 * are their parts, FLIP-147.)
 */
export function endedTasksRefusal(cluster: string, tasks: number): WeirError {
  return new WeirError(
    'SAVEPOINT_FAILED',
    `cluster "${cluster}" has ended (bounded input): every one of its ${tasks} tasks committed its final checkpoint, so there is nothing to take a savepoint of`,
    { hint: 'its output is complete; to run the job again, start a new cluster id', fault: 'external' },
  );
}

/**
 * Every task's part of savepoint `barrier.savepoint`: the one it committed, or, for a task that
 * ended (bounded input) without one, its final checkpoint's state copied in as its part (it is
 * subtask `task` of its stage at the stage's task count; names, job name and maxParallelism as the
 * other tasks' parts give them). When every task ended without a part, there is nothing running
 * to take the savepoint of: refused as the cluster having ended.
 */
async function savepointParts(
  storage: CheckpointStorage,
  cluster: string,
  tasks: readonly string[],
  checkpoints: ReadonlyMap<string, TaskCheckpoint>,
  barrier: SavepointBarrier,
): Promise<TaskSavepointPart[]> {
  const taken = tasks.flatMap((name) => {
    const part = checkpoints.get(name)?.savepoint;
    return part?.id === barrier.savepoint ? [part] : [];
  });
  const first = taken[0];
  if (first === undefined) throw endedTasksRefusal(cluster, tasks.length);
  const names = new Map(taken.flatMap((part) => part.operators.map(({ uid, name }) => [uid, name] as const)));
  const stageOf = (name: string) => name.slice(0, name.lastIndexOf('/'));
  const parts: TaskSavepointPart[] = [];
  for (const name of tasks) {
    const checkpoint = checkpoints.get(name) as TaskCheckpoint;
    if (checkpoint.savepoint?.id === barrier.savepoint) {
      parts.push(checkpoint.savepoint);
      continue;
    }
    const state = checkpoint.state;
    parts.push(
      await copySavepointPart({
        storage,
        folder: `ended-${name.replace(/[^A-Za-z0-9._-]/g, '_')}-c${checkpoint.checkpointId}`,
        // Read where the task wrote it (its record names the storage: another kind or bucket than the command's, maybe).
        read: (handle) => storageFor(state?.location ?? '', storage).readState(state?.location ?? '', handle),
        operators: state?.operators ?? [],
        barrier,
        task: checkpoint.task,
        taskCount: tasks.filter((other) => stageOf(other) === stageOf(name)).length,
        jobName: first.jobName,
        maxParallelism: first.maxParallelism,
        nameOf: (uid) => names.get(uid) ?? uid,
        // Its final committables were (or are being) committed; a restore commits them again, idempotently.
        committables: checkpoint.sinkCommit !== undefined,
      }),
    );
  }
  return parts;
}

/** The checkpoint storage the tasks' checkpoints are in (`<storage>/tasks/<stage>-<task>/p<producer>-e<epoch>/chk-<N>`). */
function storageOfTasks(cluster: string, checkpoints: readonly TaskCheckpoint[]): string {
  for (const checkpoint of checkpoints) {
    const root = checkpoint.state?.location.replace(/[/\\]tasks[/\\][^/\\]+[/\\]p\d+-e\d+[/\\]chk-\d+$/, '');
    if (root !== undefined && root !== checkpoint.state?.location) return root;
  }
  throw new WeirError('INVALID_CONFIG', `cluster "${cluster}": no task has checkpointed yet, so its checkpoint storage is not known`, {
    hint: 'give --checkpoint-storage, the folder or s3:// URL the members run with',
  });
}

/** Every task's name (`<stage uid>/<task>`), as the running members' metadata names them. */
async function taskNames(connections: ClusterConnections, cluster: string): Promise<string[]> {
  const group = (await withGroupCoordinator(connections, cluster, (coordinator) => describeGroupsV5.api.async(coordinator, [cluster], false))).groups[0];
  let names: string[] = [];
  for (const member of group?.members ?? []) {
    if (member.memberMetadata.length === 0) continue;
    const metadata = decodeMemberMetadata(member.memberMetadata, member.groupInstanceId ?? member.memberId);
    if ((metadata.taskNames?.length ?? 0) > names.length) names = metadata.taskNames ?? [];
  }
  return names;
}

async function membersGone(connections: ClusterConnections, cluster: string, deadline: number): Promise<void> {
  while ((await taskNames(connections, cluster)).length > 0) {
    if (Date.now() > deadline) {
      throw new WeirError('SAVEPOINT_FAILED', `the savepoint of cluster "${cluster}" is done, but its members did not all leave in time`, {
        hint: `see weir cluster status ${cluster}; a member of an older Weir does not read stop requests: stop it with SIGTERM`,
        fault: 'external',
      });
    }
    await sleep(500);
  }
}

/** The canonical `_metadata` of the parts: each operator's subtasks are its stage's tasks. */
export function savepointMetadata(cluster: string, id: number, tasks: readonly string[], parts: readonly TaskSavepointPart[]): CheckpointMetadata {
  const operators = new Map<string, OperatorStateMetadata>();
  parts.forEach((part, index) => {
    const task = Number((tasks[index] as string).slice((tasks[index] as string).lastIndexOf('/') + 1));
    for (const { uid, name, keyed, operator } of part.operators) {
      let entry = operators.get(uid);
      if (entry === undefined) {
        entry = { uid, name, parallelism: part.parallelism, subtasks: [] };
        operators.set(uid, entry);
      }
      if (keyed !== undefined || operator !== undefined)
        entry.subtasks.push({ subtaskIndex: task, ...(keyed ? { keyed } : {}), ...(operator ? { operator } : {}) });
    }
  });
  const first = parts[0] as TaskSavepointPart;
  const now = Date.now();
  return {
    version: 1,
    kind: 'savepoint',
    jobName: first.jobName,
    checkpointId: id,
    triggeredAt: now,
    completedAt: now,
    maxParallelism: first.maxParallelism,
    operators: [...operators.values()].map((operator) => ({ ...operator, subtasks: operator.subtasks.sort((a, b) => a.subtaskIndex - b.subtaskIndex) })),
    properties: { cluster, tasks: parts.length },
  };
}
